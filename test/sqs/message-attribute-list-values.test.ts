import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { failure, freshName, queryRequest, sqsServer } from './helpers.js';

const server = sqsServer();

async function createQueue(): Promise<string> {
  const { QueueUrl } = await server().client.send(
    new CreateQueueCommand({ QueueName: freshName('lists') }),
  );
  return QueueUrl as string;
}

async function messagesIn(QueueUrl: string): Promise<string | undefined> {
  const { Attributes } = await server().client.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Attributes?.ApproximateNumberOfMessages;
}

const UNSUPPORTED = {
  name: 'UnsupportedOperation',
  code: 'AWS.SimpleQueueService.UnsupportedOperation',
  status: 400,
};

describe('message attribute list values, which SQS does not support', () => {
  it('refuse a SendMessage with UnsupportedOperation, an empty list too, as SQS answers', async () => {
    const QueueUrl = await createQueue();
    for (const value of [
      { DataType: 'String', StringListValues: ['a', 'b'] },
      { DataType: 'String', StringValue: 'v', StringListValues: [] },
      { DataType: 'Binary', BinaryValue: new Uint8Array([1]), BinaryListValues: [] },
    ]) {
      const refused = await failure(
        server().client.send(
          new SendMessageCommand({ QueueUrl, MessageBody: 'x', MessageAttributes: { a: value } }),
        ),
      );
      expect(refused).toMatchObject(UNSUPPORTED);
      expect(refused.message).toContain('list values in SendMessage operation are not supported');
    }
    expect(await messagesIn(QueueUrl)).toBe('0');
  });

  it('refuse a whole SendMessageBatch, its other entries unsent, as SQS answers', async () => {
    const QueueUrl = await createQueue();
    const refused = await failure(
      server().client.send(
        new SendMessageBatchCommand({
          QueueUrl,
          Entries: [
            { Id: 'plain', MessageBody: 'x' },
            {
              Id: 'listed',
              MessageBody: 'y',
              MessageAttributes: { a: { DataType: 'String', StringListValues: ['a'] } },
            },
          ],
        }),
      ),
    );
    expect(refused).toMatchObject(UNSUPPORTED);
    expect(refused.message).toContain(
      'list values in SendMessageBatch operation are not supported',
    );
    expect(await messagesIn(QueueUrl)).toBe('0');
  });

  it('sent as flattened query members are refused the same way', async () => {
    const QueueUrl = await createQueue();
    const answer = await queryRequest(server().baseUrl, {
      Action: 'SendMessage',
      QueueUrl,
      MessageBody: 'x',
      'MessageAttribute.1.Name': 'a',
      'MessageAttribute.1.Value.DataType': 'String',
      'MessageAttribute.1.Value.StringListValue.1': 'first',
    });
    expect(answer.status).toBe(400);
    expect(answer.xml).toContain('<Code>AWS.SimpleQueueService.UnsupportedOperation</Code>');
    expect(await messagesIn(QueueUrl)).toBe('0');
  });

  it('sent empty as botocore sends them, the item name with no value, are refused the same way', async () => {
    const QueueUrl = await createQueue();
    const sends: Record<string, string>[] = [
      {
        Action: 'SendMessage',
        MessageBody: 'x',
        'MessageAttribute.1.Name': 'a',
        'MessageAttribute.1.Value.DataType': 'String',
        'MessageAttribute.1.Value.StringValue': 'v',
        'MessageAttribute.1.Value.StringListValue': '',
      },
      {
        Action: 'SendMessage',
        MessageBody: 'x',
        'MessageAttribute.1.Name': 'a',
        'MessageAttribute.1.Value.DataType': 'Binary',
        'MessageAttribute.1.Value.BinaryValue': 'AQ==',
        'MessageAttribute.1.Value.BinaryListValue': '',
      },
      {
        Action: 'SendMessageBatch',
        'SendMessageBatchRequestEntry.1.Id': 'plain',
        'SendMessageBatchRequestEntry.1.MessageBody': 'x',
        'SendMessageBatchRequestEntry.2.Id': 'listed',
        'SendMessageBatchRequestEntry.2.MessageBody': 'y',
        'SendMessageBatchRequestEntry.2.MessageAttribute.1.Name': 'a',
        'SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.DataType': 'String',
        'SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.StringValue': 'v',
        'SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.StringListValue': '',
      },
    ];
    for (const params of sends) {
      const { status, xml } = await queryRequest(server().baseUrl, { QueueUrl, ...params });
      expect(status, xml).toBe(400);
      expect(xml).toContain('<Code>AWS.SimpleQueueService.UnsupportedOperation</Code>');
    }
    expect(await messagesIn(QueueUrl)).toBe('0');
  });
});
