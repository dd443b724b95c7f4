import { CreateQueueCommand, ListQueueTagsCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { call } from '../server/helpers.js';
import { freshName, sqsServer } from './helpers.js';

const server = sqsServer();

/** One JSON-protocol request, as an SDK that does not check required members sends it. */
const sqs = (action: string, body: object) =>
  call(server().baseUrl, 'POST', '/sqs/', {
    raw: JSON.stringify(body),
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': `AmazonSQS.${action}`,
    },
  });

describe('TagQueue and UntagQueue without their tags', () => {
  it('TagQueue without Tags and UntagQueue without TagKeys are MissingParameter', async () => {
    const { QueueUrl } = await server().client.send(
      new CreateQueueCommand({ QueueName: freshName('tagged'), tags: { team: 'a' } }),
    );
    const tag = await sqs('TagQueue', { QueueUrl });
    expect(tag.status).toBe(400);
    expect(tag.body).toEqual({
      __type: 'com.amazonaws.sqs#MissingParameter',
      message: 'The request must contain the parameter Tags.',
    });
    const untag = await sqs('UntagQueue', { QueueUrl });
    expect(untag.status).toBe(400);
    expect(untag.body.__type).toBe('com.amazonaws.sqs#MissingParameter');
    expect(untag.body.message).toContain('TagKeys');
    const { Tags } = await server().client.send(new ListQueueTagsCommand({ QueueUrl }));
    expect(Tags).toEqual({ team: 'a' });
  });
});
