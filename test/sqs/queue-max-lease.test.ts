import {
  ChangeMessageVisibilityCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { failure, freshName, sqsServerFor, useSqsEngines } from './helpers.js';

const engines = await useSqsEngines();

/**
 * A queue made through /v1 with a maxLease (R10) shorter than SQS's 12 hours, used through SQS
 * as it is: its deliveries are leased at most that long after the receive.
 */
describe.each(engines)('a queue with a maxLease of its own over $name', (engine) => {
  const clock = new ManualClock(Date.now());
  const server = sqsServerFor(engine, { clock });

  /** A queue of the broker with these options, and a message sent to it through SQS. */
  async function queueWithMessage(visibility: number, maxLease: number): Promise<string> {
    const name = freshName('lease');
    await server().broker.queue(name, { visibility, maxLease });
    const QueueUrl = `${server().baseUrl}/sqs/000000000000/${name}`;
    await server().client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'work' }));
    return QueueUrl;
  }

  async function receiveOne(QueueUrl: string, VisibilityTimeout?: number): Promise<Message> {
    const { Messages = [] } = await server().client.send(
      new ReceiveMessageCommand({
        QueueUrl,
        WaitTimeSeconds: 0,
        ...(VisibilityTimeout === undefined ? {} : { VisibilityTimeout }),
        MessageSystemAttributeNames: ['ApproximateFirstReceiveTimestamp', 'SentTimestamp'],
      }),
    );
    expect(Messages).toHaveLength(1);
    return Messages[0] as Message;
  }

  it('gives the time of the receive as ApproximateFirstReceiveTimestamp when the lease was cut to the maxLease', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const byQueue = await queueWithMessage(120_000, 60_000);
    clock.advance(1_000);
    const receivedAt = clock.now();
    const first = await receiveOne(byQueue);
    expect(first.Attributes?.ApproximateFirstReceiveTimestamp).toBe(String(receivedAt));

    const byRequest = await queueWithMessage(30_000, 60_000);
    clock.advance(1_000);
    const askedAt = clock.now();
    const second = await receiveOne(byRequest, 100);
    expect(second.Attributes?.ApproximateFirstReceiveTimestamp).toBe(String(askedAt));
  });

  it('names the queue maxLease, not 43200 seconds, when ChangeMessageVisibility goes past it', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const QueueUrl = await queueWithMessage(30_000, 60_000);
    const message = await receiveOne(QueueUrl);
    const change = (VisibilityTimeout: number) =>
      server().client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl,
          ReceiptHandle: message.ReceiptHandle,
          VisibilityTimeout,
        }),
      );
    await change(50);
    const refused = await failure(change(100));
    expect(refused.name).toBe('InvalidParameterValue');
    expect(refused.message).toContain('beyond the limit [60 seconds]');
    expect(refused.message).not.toContain('43200');
  });
});
