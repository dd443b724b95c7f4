import { describe, expect, it } from 'vitest';
import { freshName, queryRequest, sqsServer, xmlField } from './helpers.js';

const server = sqsServer();

const query = (params: Record<string, string>) => queryRequest(server().baseUrl, params);

async function createQueue(): Promise<string> {
  const created = await query({ Action: 'CreateQueue', QueueName: freshName('qempty') });
  return xmlField(created.xml, 'QueueUrl') as string;
}

describe('query protocol answers with nothing to list', () => {
  it('hold the result element of the action, empty, which botocore reads the answer from', async () => {
    const url = await createQueue();
    const answers = {
      ReceiveMessage: await query({ Action: 'ReceiveMessage', QueueUrl: url }),
      ListQueues: await query({ Action: 'ListQueues', QueueNamePrefix: freshName('none') }),
      GetQueueAttributes: await query({ Action: 'GetQueueAttributes', QueueUrl: url }),
      ListQueueTags: await query({ Action: 'ListQueueTags', QueueUrl: url }),
      ListDeadLetterSourceQueues: await query({
        Action: 'ListDeadLetterSourceQueues',
        QueueUrl: url,
      }),
    };
    for (const [action, answer] of Object.entries(answers)) {
      expect(answer.status, action).toBe(200);
      expect(answer.xml, action).toContain(
        `<${action}Response xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><${action}Result></${action}Result><ResponseMetadata>`,
      );
    }
  });

  it('of actions without a result in the SQS model hold only the response metadata', async () => {
    const url = await createQueue();
    const params: Record<string, string>[] = [
      {
        Action: 'SetQueueAttributes',
        'Attribute.1.Name': 'DelaySeconds',
        'Attribute.1.Value': '0',
      },
      { Action: 'TagQueue', 'Tag.1.Key': 'team', 'Tag.1.Value': 'a' },
      { Action: 'UntagQueue', 'TagKey.1': 'team' },
      { Action: 'PurgeQueue' },
      { Action: 'DeleteQueue' },
    ];
    for (const each of params) {
      const answer = await query({ QueueUrl: url, ...each });
      expect(answer.status, each.Action).toBe(200);
      expect(answer.xml, each.Action).toContain(
        `<${each.Action}Response xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><ResponseMetadata>`,
      );
    }
  });
});

describe('query protocol list members sent empty', () => {
  it('are empty lists, as botocore sends one: the member name with no value', async () => {
    const url = await createQueue();
    const received = await query({
      Action: 'ReceiveMessage',
      QueueUrl: url,
      AttributeNames: '',
      MessageAttributeNames: '',
      MessageSystemAttributeNames: '',
    });
    expect(received.status).toBe(200);
    const attributes = await query({
      Action: 'GetQueueAttributes',
      QueueUrl: url,
      AttributeNames: '',
    });
    expect(attributes.status).toBe(200);
    expect(attributes.xml).not.toContain('<Attribute>');
    const untagged = await query({ Action: 'UntagQueue', QueueUrl: url, TagKeys: '' });
    expect(untagged.status).toBe(200);
  });

  it('make an empty batch EmptyBatchRequest, as SQS answers', async () => {
    const url = await createQueue();
    for (const action of [
      'SendMessageBatch',
      'DeleteMessageBatch',
      'ChangeMessageVisibilityBatch',
    ]) {
      const answer = await query({ Action: action, QueueUrl: url, Entries: '' });
      expect(answer.status, action).toBe(400);
      expect(xmlField(answer.xml, 'Code'), action).toBe('AWS.SimpleQueueService.EmptyBatchRequest');
    }
  });
});
