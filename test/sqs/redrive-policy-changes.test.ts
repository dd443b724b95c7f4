import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  SendMessageCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { call } from '../server/helpers.js';
import {
  arn,
  failure,
  freshName,
  giveBack as giveBackNow,
  receiveNow,
  sqsServerFor,
  useSqsEngines,
} from './helpers.js';

const engines = await useSqsEngines();
const FIVE_MINUTES = 300_000;

describe.each(engines)('RedrivePolicy changes over $name', (engine) => {
  // The broker's time: the de-duplication interval runs on it.
  const clock = new ManualClock(Date.now());
  const server = sqsServerFor(engine, { clock });

  async function create(name: string, attributes: Record<string, string> = {}): Promise<string> {
    const { QueueUrl } = await server().client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
    );
    return QueueUrl as string;
  }
  const policy = (target: string, maxReceiveCount: number) =>
    JSON.stringify({ deadLetterTargetArn: arn(target), maxReceiveCount });
  const setPolicy = (QueueUrl: string, RedrivePolicy: string) =>
    server().client.send(
      new SetQueueAttributesCommand({ QueueUrl, Attributes: { RedrivePolicy } }),
    );
  const redrivePolicyOf = async (QueueUrl: string) => {
    const { Attributes } = await server().client.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['RedrivePolicy'] }),
    );
    return Attributes?.RedrivePolicy;
  };
  const maxDeliveriesOf = async (name: string) =>
    (await call(server().baseUrl, 'GET', `/v1/queues/${name}`)).body.options.maxDeliveries;
  const remove = (QueueUrl: string, message: Message) =>
    server().client.send(
      new DeleteMessageCommand({ QueueUrl, ReceiptHandle: message.ReceiptHandle }),
    );
  /** Receives the one message of a source with maxReceiveCount 1 and gives it back: it dies. */
  const kill = async (QueueUrl: string) => {
    const [message] = await receiveNow(server().client, QueueUrl);
    expect(message).toBeDefined();
    await giveBackNow(server().client, QueueUrl, message as Message);
    return message as Message;
  };

  it('a limit above 1000 or none set through /v1 shows as maxReceiveCount 1000, and that policy set back keeps it', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const dlq = freshName('dlq');
    await call(server().baseUrl, 'PUT', `/v1/queues/${dlq}`, { body: {} });
    for (const maxDeliveries of [null, 5000]) {
      const name = freshName('src');
      await call(server().baseUrl, 'PUT', `/v1/queues/${name}`, {
        body: { deadLetterQueue: dlq, maxDeliveries },
      });
      const url = `${server().baseUrl}/sqs/000000000000/${name}`;
      const shown = await redrivePolicyOf(url);
      expect(JSON.parse(shown as string)).toEqual({
        deadLetterTargetArn: arn(dlq),
        maxReceiveCount: 1000,
      });
      await setPolicy(url, shown as string);
      expect(await maxDeliveriesOf(name)).toBe(maxDeliveries);
      // CreateQueue with what GetQueueAttributes shows matches the queue.
      expect(await create(name, { RedrivePolicy: shown as string })).toBe(url);
      // Any other count is set as given.
      await setPolicy(url, policy(dlq, 999));
      expect(await maxDeliveriesOf(name)).toBe(999);
      await setPolicy(url, policy(dlq, 1000));
      expect(await maxDeliveriesOf(name)).toBe(1000);
    }
  });

  it('maxReceiveCount 1000 given to a queue without a dead-letter queue is its limit', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const dlq = freshName('dlq');
    await create(dlq);
    const name = freshName('src');
    const url = await create(name);
    // No policy yet (unbounded), then one removed (unbounded again).
    for (const before of [undefined, '']) {
      if (before !== undefined) await setPolicy(url, before);
      await setPolicy(url, policy(dlq, 1000));
      expect(await maxDeliveriesOf(name)).toBe(1000);
    }
  });

  it('DeleteMessage with the handle of a message in a dead-letter queue the RedrivePolicy no longer names is refused as expired and deletes nothing', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const dlqName = freshName('dlq');
    const dlq = await create(dlqName);
    const otherName = freshName('dlq');
    await create(otherName);
    for (const next of ['', policy(otherName, 1)]) {
      const url = await create(freshName('src'), { RedrivePolicy: policy(dlqName, 1) });
      await server().client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'dies' }));
      const died = await kill(url);
      await setPolicy(url, next);
      expect(await failure(remove(url, died))).toMatchObject({
        name: 'InvalidParameterValue',
        message: expect.stringContaining('The receipt handle has expired.'),
      });
      // Still there: received from the old dead-letter queue, a later receive holds it.
      const [there] = await receiveNow(server().client, dlq);
      expect(there).toMatchObject({ Body: 'dies', MessageId: died.MessageId });
      expect(
        await failure(
          server().client.send(
            new ChangeMessageVisibilityCommand({
              QueueUrl: url,
              ReceiptHandle: died.ReceiptHandle,
              VisibilityTimeout: 10,
            }),
          ),
        ),
      ).toMatchObject({
        name: 'InvalidParameterValue',
        message: expect.stringContaining('a later receive holds the message'),
      });
      // Once it is deleted there, the stale delete is done.
      await remove(dlq, there as Message);
      await remove(url, died);
    }
  });

  it('FIFO: a send within 5 minutes of one whose message died into a dead-letter queue the RedrivePolicy no longer names is a duplicate', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const fifo = { FifoQueue: 'true' };
    const dlqName = `${freshName('dlq')}.fifo`;
    await create(dlqName, fifo);
    const otherName = `${freshName('dlq')}.fifo`;
    await create(otherName, fifo);
    for (const next of ['', policy(otherName, 1)]) {
      const url = await create(`${freshName('src')}.fifo`, {
        ...fifo,
        RedrivePolicy: policy(dlqName, 1),
      });
      const order = (MessageBody: string) =>
        server().client.send(
          new SendMessageCommand({
            QueueUrl: url,
            MessageBody,
            MessageGroupId: 'g',
            MessageDeduplicationId: 'order-1',
          }),
        );
      const first = await order('v1');
      await kill(url);
      await setPolicy(url, next);
      clock.advance(FIVE_MINUTES - 1);
      expect(await order('again')).toMatchObject({
        MessageId: first.MessageId,
        SequenceNumber: expect.any(String),
      });
      expect(await receiveNow(server().client, url)).toEqual([]);
      // 5 minutes after its send: a new message.
      clock.advance(1);
      const fresh = await order('v2');
      expect(fresh.MessageId).not.toBe(first.MessageId);
      expect((await receiveNow(server().client, url)).map((message) => message.Body)).toEqual([
        'v2',
      ]);
    }
  });
});
