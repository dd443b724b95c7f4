import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  SendMessageBatchCommand,
} from '@aws-sdk/client-sqs';
import { Consumer } from 'sqs-consumer';
import { describe, expect, it } from 'vitest';
import { freshName, sqsServerFor, useSqsEngines } from './helpers.js';

const engines = await useSqsEngines();
const GROUPS = 6;
const MESSAGES = 120;

/** Message i is in group i mod GROUPS; every fifth fails on its first delivery. */
const groupOf = (index: number) => `group-${index % GROUPS}`;
const failsFirstTime = (message: Message) =>
  Number(message.Body) % 5 === 0 && message.Attributes?.ApproximateReceiveCount === '1';

describe.each(engines)('sqs-consumer over a FIFO queue on $name', (engine) => {
  const server = sqsServerFor(engine);

  it('handles each group in send order, each message successfully exactly once, with handlers that throw', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const { QueueUrl } = await server().client.send(
      new CreateQueueCommand({
        QueueName: `${freshName('consumer')}.fifo`,
        Attributes: { FifoQueue: 'true', VisibilityTimeout: '30' },
      }),
    );
    const queueUrl = QueueUrl as string;
    for (let start = 0; start < MESSAGES; start += 10) {
      const Entries = Array.from({ length: 10 }, (_, i) => ({
        Id: `m${start + i}`,
        MessageBody: String(start + i),
        MessageGroupId: groupOf(start + i),
        MessageDeduplicationId: `m${start + i}`,
      }));
      const sent = await server().client.send(new SendMessageBatchCommand({ QueueUrl, Entries }));
      expect(sent.Failed).toEqual([]);
    }

    /** Per group, the bodies handled successfully, in the order they were handled. */
    const handled = new Map<string, number[]>();
    let failures = 0;
    let overlaps = 0;
    const inHand = new Set<string>();
    const unexpected: unknown[] = [];
    let processed = 0;
    let done: () => void = () => {};
    const allDone = new Promise<void>((resolve) => {
      done = resolve;
    });
    const handle = (message: Message) => {
      const group = message.Attributes?.MessageGroupId as string;
      expect(group).toBe(groupOf(Number(message.Body)));
      if (failsFirstTime(message)) {
        failures += 1;
        throw new Error(`handler failed on ${message.Body}`);
      }
      handled.set(group, [...(handled.get(group) ?? []), Number(message.Body)]);
    };
    const common = {
      queueUrl,
      sqs: server().client,
      batchSize: 10,
      waitTimeSeconds: 1,
      terminateVisibilityTimeout: true,
      // It warns that it does not promise FIFO order itself: the order comes from the queue.
      suppressFifoWarning: true,
      messageSystemAttributeNames: ['ApproximateReceiveCount' as const, 'MessageGroupId' as const],
    };
    /** Runs a handler holding the messages' groups: no two handlers hold one group at once. */
    const holding = async (messages: Message[], work: () => void) => {
      const groups = messages.map((message) => message.Attributes?.MessageGroupId as string);
      if (new Set(groups).size !== groups.length || groups.some((g) => inHand.has(g))) {
        overlaps += 1;
      }
      for (const group of groups) inHand.add(group);
      try {
        // Another turn of the event loop, for another consumer's delivery to show up here.
        await new Promise((resolve) => setImmediate(resolve));
        work();
      } finally {
        for (const group of groups) inHand.delete(group);
      }
    };
    const single = Consumer.create({
      ...common,
      handleMessage: async (message) => {
        await holding([message], () => handle(message));
        return message;
      },
    });
    const batch = Consumer.create({
      ...common,
      handleMessageBatch: async (messages) => {
        await holding(messages, () => {
          if (messages.some(failsFirstTime)) {
            failures += 1;
            throw new Error('batch handler failed');
          }
          for (const message of messages) handle(message);
        });
        return messages;
      },
    });
    for (const consumer of [single, batch]) {
      consumer.on('error', (error) => {
        if (!String((error as { cause?: Error }).cause?.message).includes('handler failed')) {
          unexpected.push(error);
        }
      });
      consumer.on('processing_error', () => {});
      consumer.on('message_processed', () => {
        processed += 1;
        if (processed === MESSAGES) done();
      });
      consumer.start();
    }
    const timeout = new Promise((_, reject) =>
      setTimeout(() => reject(new Error(`only ${processed} processed`)), 60_000).unref(),
    );
    try {
      await Promise.race([allDone, timeout]);
    } finally {
      const stopped = [single, batch].map(
        (consumer) => new Promise((resolve) => consumer.once('stopped', resolve)),
      );
      single.stop({ abort: true });
      batch.stop({ abort: true });
      await Promise.all(stopped);
    }

    expect(unexpected).toEqual([]);
    expect(overlaps).toBe(0);
    expect(failures).toBeGreaterThan(0);
    expect(processed).toBe(MESSAGES);
    for (let group = 0; group < GROUPS; group++) {
      const sentOrder = Array.from({ length: MESSAGES }, (_, index) => index).filter(
        (index) => index % GROUPS === group,
      );
      // In send order, each once: no repeat, no gap, no overtaking within the group.
      expect(handled.get(`group-${group}`)).toEqual(sentOrder);
    }
    const left = await server().client.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }),
    );
    expect(left.Attributes).toMatchObject({
      ApproximateNumberOfMessages: '0',
      ApproximateNumberOfMessagesNotVisible: '0',
    });
  });
});
