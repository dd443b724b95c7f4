import {
  CreateQueueCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { arn, freshName, giveBack as giveBackNow, sqsServerFor, useSqsEngines } from './helpers.js';

const engines = await useSqsEngines();

describe.each(engines)('ApproximateFirstReceiveTimestamp over $name', (engine) => {
  // The broker's time: each receive comes at a time of the test's.
  const clock = new ManualClock(Date.now());
  const server = sqsServerFor(engine, { clock });

  async function create(attributes: Record<string, string> = {}): Promise<[string, string]> {
    const name = freshName('first');
    const { QueueUrl } = await server().client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
    );
    return [name, QueueUrl as string];
  }
  /** One receive, a second after the last: the message, visible again at once once given back. */
  async function receiveOne(QueueUrl: string): Promise<Message> {
    clock.advance(1_000);
    const { Messages = [] } = await server().client.send(
      new ReceiveMessageCommand({
        QueueUrl,
        VisibilityTimeout: 30,
        WaitTimeSeconds: 0,
        MessageSystemAttributeNames: [
          'ApproximateFirstReceiveTimestamp',
          'ApproximateReceiveCount',
        ],
      }),
    );
    expect(Messages).toHaveLength(1);
    return Messages[0] as Message;
  }
  const giveBack = (QueueUrl: string, message: Message) =>
    giveBackNow(server().client, QueueUrl, message);
  /** Receives the message `times` times; answers its ApproximateFirstReceiveTimestamp each time. */
  async function receiveTimes(QueueUrl: string, times: number): Promise<string[]> {
    const firsts: string[] = [];
    for (let index = 0; index < times; index++) {
      const message = await receiveOne(QueueUrl);
      firsts.push(message.Attributes?.ApproximateFirstReceiveTimestamp as string);
      await giveBack(QueueUrl, message);
    }
    return firsts;
  }

  it('is the time of the first receive at every receive, past the 100 attempts a message keeps', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const [, url] = await create();
    await server().client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'retried' }));
    const firstAt = String(clock.now() + 1_000);
    const firsts = await receiveTimes(url, 105);
    expect(new Set(firsts)).toEqual(new Set([firstAt]));
  });

  /**
   * A message received `receives` times in a queue whose maxReceiveCount that is: it dies into
   * the dead-letter queue, is received there twice, moves back and is received again. Answers
   * its first receive's time and the ApproximateFirstReceiveTimestamp of every receive.
   */
  async function roundTrip(receives: number): Promise<{ firstAt: string; firsts: string[] }> {
    const [dlqName, dlq] = await create();
    const [sourceName, source] = await create({
      RedrivePolicy: JSON.stringify({
        deadLetterTargetArn: arn(dlqName),
        maxReceiveCount: receives,
      }),
    });
    const { MessageId } = await server().client.send(
      new SendMessageCommand({ QueueUrl: source, MessageBody: 'poison' }),
    );
    const firstAt = String(clock.now() + 1_000);
    const inSource = await receiveTimes(source, receives);
    const dlqQueue = await server().broker.queue(dlqName);
    expect(await dlqQueue.job(MessageId as string)).toMatchObject({
      state: 'ready',
      origin: { queue: sourceName },
    });
    // There its receive count starts again; its first receive stays.
    const inDlq = await receiveTimes(dlq, 2);
    expect(await dlqQueue.moveJobs()).toBe(1);
    const back = await receiveOne(source);
    expect(back).toMatchObject({ MessageId, Body: 'poison' });
    expect(back.Attributes?.ApproximateReceiveCount).toBe('1');
    const firsts = [
      ...inSource,
      ...inDlq,
      back.Attributes?.ApproximateFirstReceiveTimestamp as string,
    ];
    return { firstAt, firsts };
  }

  it('stays the first receive in the dead-letter queue and back in the source', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const { firstAt, firsts } = await roundTrip(2);
    expect(firsts).toHaveLength(5);
    expect(new Set(firsts)).toEqual(new Set([firstAt]));
  });

  it('stays the first receive after a move and back when the message was received more often than the 100 attempts its history keeps', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const { firstAt, firsts } = await roundTrip(101);
    expect(firsts).toHaveLength(104);
    expect(new Set(firsts)).toEqual(new Set([firstAt]));
  });
});
