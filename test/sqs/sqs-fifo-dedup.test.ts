import {
  CreateQueueCommand,
  DeleteMessageCommand,
  type Message,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SendMessageCommandInput,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { BrokerCatalog } from '../../src/server/sqs/catalog.js';
import { FIFO_GENERATIONS, fifoMessageId } from '../../src/server/sqs/fifo.js';
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

describe.each(engines)('FIFO de-duplication after a message died, over $name', (engine) => {
  // The broker's time: retention, leases and the de-duplication interval run on it.
  const clock = new ManualClock(Date.now());
  const server = sqsServerFor(engine, { clock });

  async function fifoQueue(attributes: Record<string, string> = {}): Promise<[string, string]> {
    const name = `${freshName('dedup')}.fifo`;
    const { QueueUrl } = await server().client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: 'true', ...attributes } }),
    );
    return [name, QueueUrl as string];
  }
  const send = (QueueUrl: string, input: Omit<SendMessageCommandInput, 'QueueUrl'>) =>
    server().client.send(new SendMessageCommand({ QueueUrl, ...input }));
  const order = (QueueUrl: string, MessageBody: string) =>
    send(QueueUrl, { MessageBody, MessageGroupId: 'g', MessageDeduplicationId: 'order-1' });
  const receive = (QueueUrl: string) => receiveNow(server().client, QueueUrl);
  const giveBack = (QueueUrl: string, message: Message) =>
    giveBackNow(server().client, QueueUrl, message);
  const remove = (QueueUrl: string, message: Message) =>
    server().client.send(
      new DeleteMessageCommand({ QueueUrl, ReceiptHandle: message.ReceiptHandle }),
    );
  /** Receives and deletes until the queue is empty: [body, MessageId, source ARN] of each. */
  const drain = async (QueueUrl: string) => {
    const seen: (string | undefined)[][] = [];
    for (let round = 0; round < 10; round++) {
      const messages = await receive(QueueUrl);
      if (messages.length === 0) break;
      for (const message of messages) {
        seen.push([message.Body, message.MessageId, message.Attributes?.DeadLetterQueueSourceArn]);
        await remove(QueueUrl, message);
      }
    }
    return seen;
  };
  /** After the first message expired: the next ones are kept 14 days. */
  const keepLong = (QueueUrl: string) =>
    server().client.send(
      new SetQueueAttributesCommand({
        QueueUrl,
        Attributes: { MessageRetentionPeriod: '1209600' },
      }),
    );
  const seq = (text: string | undefined) => BigInt(text as string);
  /** The key the queue's job ids are derived with (a queue made again gets another). */
  const keyOf = async (name: string) =>
    (await new BrokerCatalog(server().broker).get(name))?.fifoIdKey;

  it('the first MessageId of a de-duplication id is the one it always was', () => {
    // Messages stored before ids had generations keep de-duplicating their sends.
    expect(fifoMessageId('queue', 'g', 'order-1')).toBe('030e62b0-4dd4-8cf3-87a0-d61ecf62d686');
    expect(fifoMessageId('queue', 'g', 'order-1', 0)).toBe('030e62b0-4dd4-8cf3-87a0-d61ecf62d686');
    expect(fifoMessageId('messageGroup', 'g', 'order-1')).toBe(
      '1f1fe959-bb98-87fc-a30e-2e8c8c6922a8',
    );
    const generations = [1, 2, 3].map((k) => fifoMessageId('queue', 'g', 'order-1', k));
    expect(new Set(['030e62b0-4dd4-8cf3-87a0-d61ecf62d686', ...generations]).size).toBe(4);
    for (const id of generations)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab]/);
  });

  it('a message that expired holds its de-duplication id for 5 minutes from its send, then a send with it is a new message', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const [name, url] = await fifoQueue({ MessageRetentionPeriod: '60' });
    const first = await order(url, 'v1');
    clock.advance(60_000);
    expect(await receive(url)).toEqual([]);
    const queue = await server().broker.queue(name);
    expect(await queue.stats()).toMatchObject({ expired: 1, dead: 1 });
    await keepLong(url);
    // Dead, and sent less than 5 minutes ago: a duplicate, answered with the original.
    clock.advance(FIVE_MINUTES - 60_001);
    expect(await order(url, 'v2')).toMatchObject({
      MessageId: first.MessageId,
      SequenceNumber: first.SequenceNumber,
    });
    expect(await receive(url)).toEqual([]);
    // 5 minutes after its send: a new message, with a new MessageId and SequenceNumber.
    clock.advance(1);
    const fresh = await order(url, 'v3');
    expect(fresh.MessageId).not.toBe(first.MessageId);
    // Under the next job id of its de-duplication id.
    const key = await keyOf(name);
    const jobId = (generation: number) => fifoMessageId('queue', 'g', 'order-1', generation, key);
    expect((await queue.job(jobId(1)))?.state).toBe('ready');
    expect(seq(fresh.SequenceNumber)).toBeGreaterThan(seq(first.SequenceNumber));
    // While it is in the queue it holds the id, whatever the time.
    clock.advance(10 * 60_000 - 1);
    const [message] = await receive(url);
    expect(message).toMatchObject({ Body: 'v3', MessageId: fresh.MessageId });
    expect(message?.Attributes?.SequenceNumber).toBe(fresh.SequenceNumber);
    expect(await order(url, 'v4')).toMatchObject({
      MessageId: fresh.MessageId,
      SequenceNumber: fresh.SequenceNumber,
    });
    // Deleted: remembered for 5 minutes, then free again.
    await remove(url, message as Message);
    clock.advance(FIVE_MINUTES - 1);
    expect(await order(url, 'v5')).toMatchObject({ SequenceNumber: fresh.SequenceNumber });
    expect(await receive(url)).toEqual([]);
    clock.advance(1);
    const again = await order(url, 'v6');
    expect(again.MessageId).not.toBe(fresh.MessageId);
    expect((await queue.job(jobId(1)))?.state).toBe('ready');
    expect((await receive(url)).map((each) => each.Body)).toEqual(['v6']);
    // The first one is still in the dead set, as it died.
    expect((await queue.deadLetters()).map((dead) => [dead.id, dead.reason])).toEqual([
      [jobId(0), 'expired'],
    ]);
  });

  it('with a RedrivePolicy: a send after the first message died into the dead-letter queue is a new message that can die there too', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const [dlqName, dlq] = await fifoQueue();
    const [sourceName, source] = await fifoQueue({
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn(dlqName), maxReceiveCount: 1 }),
    });
    const kill = async () => {
      const [message] = await receive(source);
      expect(message).toBeDefined();
      await giveBack(source, message as Message);
      return message as Message;
    };
    const v1 = await order(source, 'v1');
    await kill();
    // In the dead-letter queue and sent less than 5 minutes ago: a duplicate of it.
    clock.advance(FIVE_MINUTES - 1);
    expect((await order(source, 'again')).MessageId).toBe(v1.MessageId);
    expect(await receive(source)).toEqual([]);
    clock.advance(1);
    const v2 = await order(source, 'v2');
    expect(v2.MessageId).not.toBe(v1.MessageId);
    const died = await kill();
    expect(died).toMatchObject({ Body: 'v2', MessageId: v2.MessageId });
    // Both are in the dead-letter queue, none stays in the source's dead set.
    const dlqQueue = await server().broker.queue(dlqName);
    const sourceKey = await keyOf(sourceName);
    for (const generation of [0, 1]) {
      const id = fifoMessageId('queue', 'g', 'order-1', generation, sourceKey);
      expect((await dlqQueue.job(id))?.origin?.queue).toBe(sourceName);
    }
    const sourceQueue = await server().broker.queue(sourceName);
    expect((await sourceQueue.stats()).dead).toBe(0);
    // v2 sent less than 5 minutes ago: a duplicate; then a third message.
    expect((await order(source, 'again')).MessageId).toBe(v2.MessageId);
    clock.advance(FIVE_MINUTES);
    const v3 = await order(source, 'v3');
    expect(new Set([v1.MessageId, v2.MessageId, v3.MessageId]).size).toBe(3);
    expect((await receive(source)).map((message) => message.Body)).toEqual(['v3']);
    // The dead-letter queue gives them in the order they died (one group: one at a time).
    expect(await drain(dlq)).toEqual([
      ['v1', v1.MessageId, arn(sourceName)],
      ['v2', v2.MessageId, arn(sourceName)],
    ]);
  });

  it('the dead-letter queue holding the id for another queue: the send takes the next MessageId, not a duplicate', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const [dlqName, dlq] = await fifoQueue();
    const [, source] = await fifoQueue({
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn(dlqName), maxReceiveCount: 1 }),
    });
    // Sent to the dead-letter queue itself: the same de-duplication id gives the same id there.
    const direct = await order(dlq, 'direct');
    const sent = await order(source, 'mine');
    expect(sent.MessageId).not.toBe(direct.MessageId);
    const [message] = await receive(source);
    expect(message).toMatchObject({ Body: 'mine', MessageId: sent.MessageId });
    await giveBack(source, message as Message);
    expect((await drain(dlq)).map(([body]) => body)).toEqual(['direct', 'mine']);
  });

  it('SendMessageBatch: an entry whose earlier message died 5 minutes ago is sent anew; duplicates are answered, not published', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const [name, url] = await fifoQueue({ MessageRetentionPeriod: '60' });
    const old = await order(url, 'old');
    clock.advance(60_000);
    expect(await receive(url)).toEqual([]);
    await keepLong(url);
    const live = await send(url, {
      MessageBody: 'live',
      MessageGroupId: 'h',
      MessageDeduplicationId: 'live-1',
    });
    clock.advance(FIVE_MINUTES - 60_000);
    const entry = (Id: string, MessageDeduplicationId: string) => ({
      Id,
      MessageBody: Id,
      MessageGroupId: 'g',
      MessageDeduplicationId,
    });
    const answer = await server().client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          entry('renewed', 'order-1'),
          entry('live', 'live-1'),
          entry('renewedAgain', 'order-1'),
          entry('fresh', 'fresh-1'),
        ],
      }),
    );
    expect(answer.Failed ?? []).toEqual([]);
    const byId = Object.fromEntries((answer.Successful ?? []).map((each) => [each.Id, each]));
    expect(byId.renewed?.MessageId).not.toBe(old.MessageId);
    const renewedJob = await (await server().broker.queue(name)).job(
      fifoMessageId('queue', 'g', 'order-1', 1, await keyOf(name)),
    );
    expect(renewedJob?.state).toBe('ready');
    expect(byId.renewedAgain).toMatchObject({
      MessageId: byId.renewed?.MessageId,
      SequenceNumber: byId.renewed?.SequenceNumber,
    });
    expect(byId.live).toMatchObject({
      MessageId: live.MessageId,
      SequenceNumber: live.SequenceNumber,
    });
    expect(seq(byId.renewed?.SequenceNumber)).toBeGreaterThan(seq(old.SequenceNumber));
    expect((await receive(url)).map((message) => message.Body).sort()).toEqual(['live', 'renewed']);
    const stats = await (await server().broker.queue(name)).stats();
    expect(stats).toMatchObject({ active: 2, ready: 0, waiting: 1, dead: 1 });
  });

  it(`a de-duplication id whose ${FIFO_GENERATIONS} MessageIds are all held by dead messages is refused, not looped on`, async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    // The bound is the endpoint's, whatever the storage: a thousand dead jobs on memory only.
    if (engine.name !== 'memory') context.skip('the bound is checked over memory');
    const [name, url] = await fifoQueue();
    const queue = await server().broker.queue(name);
    const key = await keyOf(name);
    const ids = Array.from({ length: FIFO_GENERATIONS }, (_, k) =>
      fifoMessageId('queue', 'g', 'full', k, key),
    );
    for (let start = 0; start < ids.length; start += 100) {
      await queue.publishBatch(ids.slice(start, start + 100).map((id) => ({ id, payload: id })));
    }
    for (const id of ids) await queue.cancel(id);
    clock.advance(FIVE_MINUTES);
    const refused = await failure(
      send(url, { MessageBody: 'x', MessageGroupId: 'g', MessageDeduplicationId: 'full' }),
    );
    expect(refused).toMatchObject({ name: 'InternalFailure', status: 500 });
    expect(refused.message).toContain('full');
    expect((await queue.stats()).ready).toBe(0);
  });
});
