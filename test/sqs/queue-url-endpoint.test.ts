import {
  CreateQueueCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { failure, freshName, queryRequest, sqsServer, xmlField } from './helpers.js';

const server = sqsServer();
const clients: SQSClient[] = [];

afterEach(() => {
  for (const client of clients.splice(0)) client.destroy();
});

function clientAt(endpoint: string): SQSClient {
  const client = new SQSClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
  });
  clients.push(client);
  return client;
}

describe('a QueueUrl given as the endpoint', () => {
  it('answers the AWS SDK v3, which posts to the QueueUrl with a slash after it', async () => {
    const { client } = server();
    const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: freshName() }));
    const atQueue = clientAt(QueueUrl as string);
    const sent = await atQueue.send(new SendMessageCommand({ QueueUrl, MessageBody: 'hello' }));
    const { Messages = [] } = await atQueue.send(
      new ReceiveMessageCommand({ QueueUrl, VisibilityTimeout: 600, WaitTimeSeconds: 0 }),
    );
    expect(Messages.map((message) => [message.MessageId, message.Body])).toEqual([
      [sent.MessageId, 'hello'],
    ]);
    await atQueue.send(
      new DeleteMessageCommand({ QueueUrl, ReceiptHandle: Messages[0]?.ReceiptHandle }),
    );
  });

  it('answers the query protocol posted there, the queue named by the path', async () => {
    const { baseUrl, client } = server();
    const name = freshName();
    await client.send(new CreateQueueCommand({ QueueName: name }));
    const answer = await queryRequest(
      baseUrl,
      { Action: 'GetQueueAttributes', 'AttributeName.1': 'QueueArn' },
      `/sqs/000000000000/${name}/`,
    );
    expect(answer.status).toBe(200);
    expect(xmlField(answer.xml, 'Value')).toBe(`arn:aws:sqs:us-east-1:000000000000:${name}`);
  });

  it('an account path naming no queue needs a QueueUrl, as the endpoint does', async () => {
    const { baseUrl } = server();
    const atAccount = clientAt(`${baseUrl}/sqs/000000000000/`);
    expect(
      await failure(atAccount.send(new ReceiveMessageCommand({ QueueUrl: undefined }))),
    ).toMatchObject({ name: 'MissingParameter', status: 400 });
  });
});
