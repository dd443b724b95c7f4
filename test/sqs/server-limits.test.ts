import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { failure, freshName, sqsServer } from './helpers.js';

const server = sqsServer({
  limits: {
    maxVisibilityMs: 2000,
    maxDelayMs: 2000,
    maxWaitMs: 2000,
    maxPayloadBytes: 2048,
    maxBodyBytes: 8192,
  },
});

const urlOf = (name: string) => `${server().baseUrl}/sqs/000000000000/${name}`;

async function refused(promise: Promise<unknown>, parameter: string, setting: string) {
  const error = await failure(promise);
  expect(error).toMatchObject({ name: 'InvalidParameterValue', status: 400 });
  expect(error.message).toContain(`parameter ${parameter}`);
  expect(error.message).toContain(setting);
}

describe("the server's limits hold through the SQS endpoint, as through its own routes", () => {
  it('a queue is not made or set with a lease, delay or wait above them', async () => {
    const { client } = server();
    const name = freshName('limits');
    await refused(
      client.send(new CreateQueueCommand({ QueueName: name })),
      'VisibilityTimeout',
      'maxVisibilityMs',
    );
    await refused(
      client.send(
        new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '3' } }),
      ),
      'VisibilityTimeout',
      'maxVisibilityMs',
    );
    expect((await client.send(new ListQueuesCommand({}))).QueueUrls ?? []).not.toContain(
      urlOf(name),
    );
    await client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '2' } }),
    );
    for (const [attribute, setting] of [
      ['VisibilityTimeout', 'maxVisibilityMs'],
      ['DelaySeconds', 'maxDelayMs'],
      ['ReceiveMessageWaitTimeSeconds', 'maxWaitMs'],
    ] as const) {
      await refused(
        client.send(
          new SetQueueAttributesCommand({
            QueueUrl: urlOf(name),
            Attributes: { [attribute]: '3' },
          }),
        ),
        attribute,
        setting,
      );
    }
    const queue = await server().broker.queue(name);
    expect((await queue.options()).visibility).toBe(2000);
  });

  it('a message is not sent larger or later, nor received or kept invisible longer, than they allow', async () => {
    const { client } = server();
    const name = freshName('limits');
    await client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '1' } }),
    );
    const QueueUrl = urlOf(name);
    await refused(
      client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x'.repeat(2049) })),
      'MessageBody',
      'maxPayloadBytes',
    );
    await refused(
      client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'late', DelaySeconds: 3 })),
      'DelaySeconds',
      'maxDelayMs',
    );
    const queue = await server().broker.queue(name);
    expect(await queue.stats()).toMatchObject({ ready: 0, delayed: 0 });
    await client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x'.repeat(2048) }));
    await refused(
      client.send(new ReceiveMessageCommand({ QueueUrl, VisibilityTimeout: 3 })),
      'VisibilityTimeout',
      'maxVisibilityMs',
    );
    await refused(
      client.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 3 })),
      'WaitTimeSeconds',
      'maxWaitMs',
    );
    expect(await queue.stats()).toMatchObject({ ready: 1, active: 0 });
    const { Messages } = await client.send(new ReceiveMessageCommand({ QueueUrl }));
    const handle = Messages?.[0]?.ReceiptHandle as string;
    await refused(
      client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl,
          ReceiptHandle: handle,
          VisibilityTimeout: 3,
        }),
      ),
      'VisibilityTimeout',
      'maxVisibilityMs',
    );
  });

  it("a receive naming no VisibilityTimeout is refused where the queue's own lease is above them", async () => {
    const name = freshName('limits');
    // Made in-process, where the server's limits do not reach.
    const queue = await server().broker.queue(name, { visibility: 30_000 });
    await queue.publish({ id: 'a' });
    await refused(
      server().client.send(new ReceiveMessageCommand({ QueueUrl: urlOf(name) })),
      'VisibilityTimeout',
      'maxVisibilityMs',
    );
    expect(await queue.stats()).toMatchObject({ ready: 1, active: 0 });
    const named = await server().client.send(
      new ReceiveMessageCommand({ QueueUrl: urlOf(name), VisibilityTimeout: 1 }),
    );
    expect(named.Messages).toHaveLength(1);
  });
});
