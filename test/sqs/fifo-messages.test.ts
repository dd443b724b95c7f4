import { createHash } from 'node:crypto';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SendMessageCommandInput,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { failure, freshName, sqsServerFor, useSqsEngines } from './helpers.js';

const engines = await useSqsEngines();
const md5 = (text: string) => createHash('md5').update(text).digest('hex');

describe.each(engines)('FIFO messages over $name', (engine) => {
  // The broker's time: leases and the de-duplication window run on it, so no test sleeps.
  const clock = new ManualClock(Date.now());
  const server = sqsServerFor(engine, { clock });

  async function fifoQueue(attributes: Record<string, string> = {}): Promise<string> {
    const { QueueUrl } = await server().client.send(
      new CreateQueueCommand({
        QueueName: `${freshName('fifo')}.fifo`,
        Attributes: { FifoQueue: 'true', ...attributes },
      }),
    );
    return QueueUrl as string;
  }
  const send = (QueueUrl: string, input: Omit<SendMessageCommandInput, 'QueueUrl'>) =>
    server().client.send(new SendMessageCommand({ QueueUrl, ...input }));
  /** A receive that never waits (the clock is the test's). */
  const receive = async (QueueUrl: string, max = 10, VisibilityTimeout = 30) =>
    (
      await server().client.send(
        new ReceiveMessageCommand({
          QueueUrl,
          MaxNumberOfMessages: max,
          VisibilityTimeout,
          WaitTimeSeconds: 0,
          MessageSystemAttributeNames: ['All'],
        }),
      )
    ).Messages ?? [];
  const remove = (QueueUrl: string, message: Message) =>
    server().client.send(
      new DeleteMessageCommand({ QueueUrl, ReceiptHandle: message.ReceiptHandle }),
    );
  const count = async (QueueUrl: string) => {
    const { Attributes = {} } = await server().client.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }),
    );
    return (
      Number(Attributes.ApproximateNumberOfMessages) +
      Number(Attributes.ApproximateNumberOfMessagesNotVisible)
    );
  };

  it('a send needs a MessageGroupId and a de-duplication id; per-message DelaySeconds is refused; nothing is enqueued', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const url = await fifoQueue();
    const noGroup = await failure(send(url, { MessageBody: 'x', MessageDeduplicationId: 'd' }));
    expect(noGroup).toMatchObject({ name: 'MissingParameter', status: 400 });
    expect(noGroup.message).toContain('MessageGroupId');
    const noDedup = await failure(send(url, { MessageBody: 'x', MessageGroupId: 'g' }));
    expect(noDedup.name).toBe('InvalidParameterValue');
    expect(noDedup.message).toContain('ContentBasedDeduplication');
    const delayed = await failure(
      send(url, {
        MessageBody: 'x',
        MessageGroupId: 'g',
        MessageDeduplicationId: 'd',
        DelaySeconds: 5,
      }),
    );
    expect(delayed.name).toBe('InvalidParameterValue');
    expect(delayed.message).toContain('DelaySeconds');
    for (const [MessageGroupId, MessageDeduplicationId] of [
      ['has space', 'd'],
      ['g', 'é'],
      ['x'.repeat(129), 'd'],
      ['g', 'd'.repeat(129)],
    ]) {
      const refused = await failure(
        send(url, { MessageBody: 'x', MessageGroupId, MessageDeduplicationId }),
      );
      expect(refused.name).toBe('InvalidParameterValue');
      expect(refused.message).toContain('alphanumeric and punctuation');
    }
    expect(await count(url)).toBe(0);
    // DelaySeconds 0 says nothing: taken. Punctuation is allowed in both ids.
    const sent = await send(url, {
      MessageBody: 'x',
      MessageGroupId: 'g!~{}',
      MessageDeduplicationId: 'd#"/',
      DelaySeconds: 0,
    });
    expect(sent.SequenceNumber).toMatch(/^\d{20}$/);
    // A standard queue refuses a de-duplication id, as SQS does.
    const { QueueUrl: standard } = await server().client.send(
      new CreateQueueCommand({ QueueName: freshName('std') }),
    );
    const onStandard = await failure(
      send(standard as string, { MessageBody: 'x', MessageDeduplicationId: 'd' }),
    );
    expect(onStandard.name).toBe('InvalidParameterValue');
    expect(onStandard.message).toContain('not valid for this queue type');
  });

  it('the queue’s DelaySeconds applies to every send, DelaySeconds 0 included (SendMessage and SendMessageBatch)', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const url = await fifoQueue({ ContentBasedDeduplication: 'true', DelaySeconds: '5' });
    await send(url, { MessageBody: 'no member', MessageGroupId: 'g1' });
    await send(url, { MessageBody: 'zero', MessageGroupId: 'g2', DelaySeconds: 0 });
    const batch = await server().client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [{ Id: 'zero', MessageBody: 'batch zero', MessageGroupId: 'g3', DelaySeconds: 0 }],
      }),
    );
    expect(batch.Failed ?? []).toEqual([]);
    const { Attributes = {} } = await server().client.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }),
    );
    expect(Attributes.ApproximateNumberOfMessagesDelayed).toBe('3');
    expect(await receive(url)).toEqual([]);
    clock.advance(5_000);
    expect((await receive(url)).map((message) => message.Body).sort()).toEqual([
      'batch zero',
      'no member',
      'zero',
    ]);
  });

  it('each group’s messages come in send order, one in flight per group, with groups interleaved', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const url = await fifoQueue();
    const order = ['a1', 'b1', 'a2', 'c1', 'b2', 'a3', 'c2', 'b3'];
    const sequence: Record<string, string> = {};
    for (const body of order) {
      const sent = await send(url, {
        MessageBody: body,
        MessageGroupId: body[0] as string,
        MessageDeduplicationId: `dedup-${body}`,
      });
      expect(sent.MD5OfMessageBody).toBe(md5(body));
      sequence[body] = sent.SequenceNumber as string;
    }
    // SequenceNumbers: 20 digits, increasing in send order (as text and as numbers).
    const numbers = order.map((body) => sequence[body] as string);
    expect(numbers.every((text) => /^\d{20}$/.test(text))).toBe(true);
    expect([...numbers].sort()).toEqual(numbers);
    expect(new Set(numbers).size).toBe(order.length);

    // One receive of ten: the first of each group only.
    const first = await receive(url);
    expect(first.map((message) => message.Body)).toEqual(['a1', 'b1', 'c1']);
    const [a1, b1, c1] = first as [Message, Message, Message];
    expect(a1.Attributes).toMatchObject({
      MessageGroupId: 'a',
      MessageDeduplicationId: 'dedup-a1',
      SequenceNumber: sequence.a1,
      ApproximateReceiveCount: '1',
    });
    // Every group has one in flight: nothing more until one is deleted or visible again.
    expect(await receive(url)).toEqual([]);
    await remove(url, b1);
    expect((await receive(url)).map((message) => message.Body)).toEqual(['b2']);
    // c1 made visible again comes back before c2; a1's visibility runs out: a1 again, not a2.
    await server().client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: url,
        ReceiptHandle: c1.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const c1Again = await receive(url, 10, 60);
    expect(c1Again.map((message) => message.Body)).toEqual(['c1']);
    clock.advance(30_000);
    const again = await receive(url, 10, 60);
    expect(
      again.map((message) => [message.Body, message.Attributes?.ApproximateReceiveCount]),
    ).toEqual([
      ['a1', '2'],
      ['b2', '2'],
    ]);
    const stale = await failure(remove(url, a1));
    expect(stale.name).toBe('InvalidParameterValue');
    expect(stale.message).toContain('expired');

    // Drain: each receive gets at most one message of a group, and each group's come in order.
    const seen: string[] = [];
    expect(await receive(url)).toEqual([]);
    let inHand = [...again, ...c1Again];
    for (let round = 0; inHand.length > 0 && round < 20; round++) {
      const groups = inHand.map((message) => message.Attributes?.MessageGroupId);
      expect(new Set(groups).size).toBe(groups.length);
      for (const message of inHand) {
        seen.push(message.Body as string);
        await remove(url, message);
      }
      inHand = await receive(url, 10, 60);
    }
    const byGroup = (bodies: string[], group: string) =>
      bodies.filter((body) => body.startsWith(group));
    for (const group of ['a', 'b', 'c']) {
      expect(byGroup(['b1', ...seen], group)).toEqual(byGroup(order, group));
    }
    expect(await count(url)).toBe(0);
  });

  it('a repeated de-duplication id is accepted, not enqueued, and answered with the original MessageId and SequenceNumber; after the delete, within 5 minutes, with its SequenceNumber', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const url = await fifoQueue();
    const original = await send(url, {
      MessageBody: 'first',
      MessageGroupId: 'g',
      MessageDeduplicationId: 'order-42',
    });
    expect(original.MessageId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab]/);
    const repeat = await send(url, {
      MessageBody: 'second',
      MessageGroupId: 'other',
      MessageDeduplicationId: 'order-42',
    });
    expect(repeat).toMatchObject({
      MessageId: original.MessageId,
      SequenceNumber: original.SequenceNumber,
      MD5OfMessageBody: md5('second'),
    });
    expect(await count(url)).toBe(1);
    const [message] = await receive(url);
    expect(message).toMatchObject({ MessageId: original.MessageId, Body: 'first' });
    await remove(url, message as Message);
    // Deleted, and still a duplicate within the window (its MessageId went with it).
    clock.advance(299_000);
    const afterDelete = await send(url, {
      MessageBody: 'third',
      MessageGroupId: 'g',
      MessageDeduplicationId: 'order-42',
    });
    expect(afterDelete.SequenceNumber).toBe(original.SequenceNumber);
    expect(await receive(url)).toEqual([]);
    // After 5 minutes from the delete it is a new message, with a new MessageId and
    // SequenceNumber.
    clock.advance(1_000);
    const fresh = await send(url, {
      MessageBody: 'fourth',
      MessageGroupId: 'g',
      MessageDeduplicationId: 'order-42',
    });
    expect(fresh.MessageId).not.toBe(original.MessageId);
    expect(BigInt(fresh.SequenceNumber as string)).toBeGreaterThan(
      BigInt(original.SequenceNumber as string),
    );
    expect((await receive(url)).map((each) => each.Body)).toEqual(['fourth']);
  });

  it('ContentBasedDeduplication: the SHA-256 of the body is the de-duplication id unless one is given', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const url = await fifoQueue({ ContentBasedDeduplication: 'true' });
    const one = await send(url, { MessageBody: 'same', MessageGroupId: 'g' });
    const two = await send(url, { MessageBody: 'same', MessageGroupId: 'g' });
    const other = await send(url, { MessageBody: 'other', MessageGroupId: 'g' });
    const explicit = await send(url, {
      MessageBody: 'same',
      MessageGroupId: 'g',
      MessageDeduplicationId: 'explicit',
    });
    expect(two).toMatchObject({ MessageId: one.MessageId, SequenceNumber: one.SequenceNumber });
    expect(new Set([one.MessageId, other.MessageId, explicit.MessageId]).size).toBe(3);
    expect(await count(url)).toBe(3);
    const [first] = await receive(url);
    expect(first?.Attributes?.MessageDeduplicationId).toBe(
      createHash('sha256').update('same').digest('hex'),
    );
    await remove(url, first as Message);
    expect(await send(url, { MessageBody: 'same', MessageGroupId: 'g' })).toMatchObject({
      SequenceNumber: one.SequenceNumber,
    });
    expect(await count(url)).toBe(2);
  });

  it('DeduplicationScope messageGroup: a de-duplication id repeats only within its group', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const url = await fifoQueue({ DeduplicationScope: 'messageGroup' });
    const inA = await send(url, {
      MessageBody: '1',
      MessageGroupId: 'a',
      MessageDeduplicationId: 'd',
    });
    const inB = await send(url, {
      MessageBody: '2',
      MessageGroupId: 'b',
      MessageDeduplicationId: 'd',
    });
    const againA = await send(url, {
      MessageBody: '3',
      MessageGroupId: 'a',
      MessageDeduplicationId: 'd',
    });
    expect(inB.MessageId).not.toBe(inA.MessageId);
    expect(againA.MessageId).toBe(inA.MessageId);
    expect(await count(url)).toBe(2);
  });

  it('SendMessageBatch: entries that fail their checks fail alone; a repeated id in the batch is a duplicate of the first', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const url = await fifoQueue();
    const answer = await server().client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'ok1', MessageBody: 'one', MessageGroupId: 'g', MessageDeduplicationId: 'd1' },
          { Id: 'noGroup', MessageBody: 'x', MessageDeduplicationId: 'd9' },
          {
            Id: 'delayed',
            MessageBody: 'x',
            MessageGroupId: 'g',
            MessageDeduplicationId: 'd8',
            DelaySeconds: 3,
          },
          { Id: 'repeat', MessageBody: 'again', MessageGroupId: 'g', MessageDeduplicationId: 'd1' },
          { Id: 'noDedup', MessageBody: 'x', MessageGroupId: 'g' },
          { Id: 'ok2', MessageBody: 'two', MessageGroupId: 'g', MessageDeduplicationId: 'd2' },
        ],
      }),
    );
    expect(answer.Failed?.map((entry) => [entry.Id, entry.Code, entry.SenderFault])).toEqual([
      ['noGroup', 'MissingParameter', true],
      ['delayed', 'InvalidParameterValue', true],
      ['noDedup', 'InvalidParameterValue', true],
    ]);
    const byId = Object.fromEntries((answer.Successful ?? []).map((entry) => [entry.Id, entry]));
    expect(Object.keys(byId)).toEqual(['ok1', 'repeat', 'ok2']);
    expect(byId.repeat).toMatchObject({
      MessageId: byId.ok1?.MessageId,
      SequenceNumber: byId.ok1?.SequenceNumber,
      MD5OfMessageBody: md5('again'),
    });
    expect(BigInt(byId.ok2?.SequenceNumber as string)).toBeGreaterThan(
      BigInt(byId.ok1?.SequenceNumber as string),
    );
    const [first] = await receive(url);
    expect(first).toMatchObject({ Body: 'one', MessageId: byId.ok1?.MessageId });
    await remove(url, first as Message);
    expect((await receive(url)).map((message) => message.Body)).toEqual(['two']);
  });
});
