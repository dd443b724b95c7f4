import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { Consumer } from 'sqs-consumer';
import { expect, it } from 'vitest';
import { freshName, sqsServer } from './helpers.js';

const MESSAGES = 300;
const server = sqsServer();

/** Every seventh message fails on its first delivery. */
const failsFirstTime = (message: Message) =>
  Number(message.Body) % 7 === 0 && message.Attributes?.ApproximateReceiveCount === '1';

it('sqs-consumer: handlers that throw get the message again; each succeeds exactly once', async () => {
  const { QueueUrl } = await server().client.send(
    new CreateQueueCommand({ QueueName: freshName('consumer') }),
  );
  const queueUrl = QueueUrl as string;
  for (let start = 0; start < MESSAGES; start += 10) {
    const Entries = Array.from({ length: 10 }, (_, i) => ({
      Id: `m${start + i}`,
      MessageBody: String(start + i),
    }));
    const sent = await server().client.send(new SendMessageBatchCommand({ QueueUrl, Entries }));
    expect(sent.Failed).toEqual([]);
  }

  const successes = new Map<string, number>();
  let failures = 0;
  let reportErrors: unknown[] = [];
  let done: () => void = () => {};
  const allDone = new Promise<void>((resolve) => {
    done = resolve;
  });
  const succeed = (message: Message) => {
    successes.set(message.Body as string, (successes.get(message.Body as string) ?? 0) + 1);
  };
  // Emitted once a message's delete answered: then the queue must be empty.
  let processed = 0;
  const onProcessed = () => {
    processed += 1;
    if (processed === MESSAGES) done();
  };
  const common = {
    queueUrl,
    batchSize: 10,
    waitTimeSeconds: 1,
    terminateVisibilityTimeout: true,
    messageSystemAttributeNames: ['ApproximateReceiveCount' as const],
  };
  // No endpoint: the client posts to the QueueUrl's origin (useQueueUrlAsEndpoint).
  const originClient = new SQSClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    // Quiet: it warns on every call that the QueueUrl's host replaces AWS's endpoint.
    logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  });
  const single = Consumer.create({
    ...common,
    sqs: originClient,
    handleMessage: async (message) => {
      if (failsFirstTime(message)) {
        failures += 1;
        throw new Error(`handler failed on ${message.Body}`);
      }
      succeed(message);
      return message;
    },
  });
  const batch = Consumer.create({
    ...common,
    sqs: server().client,
    handleMessageBatch: async (messages) => {
      if (messages.some(failsFirstTime)) {
        failures += 1;
        throw new Error('batch handler failed');
      }
      for (const message of messages) succeed(message);
      return messages;
    },
  });
  for (const consumer of [single, batch]) {
    // Our own handlers' failures are reported as errors too; anything else is a defect.
    consumer.on('error', (error) => {
      if (!String((error as { cause?: Error }).cause?.message).includes('handler failed')) {
        reportErrors = [...reportErrors, error];
      }
    });
    consumer.on('processing_error', () => {});
    consumer.on('message_processed', onProcessed);
    consumer.start();
  }
  const timeout = new Promise((_, reject) =>
    setTimeout(() => reject(new Error(`only ${successes.size} handled`)), 60_000).unref(),
  );
  let errorsWhileRunning: unknown[] = [];
  try {
    await Promise.race([allDone, timeout]);
  } finally {
    errorsWhileRunning = reportErrors;
    const stopped = [single, batch].map(
      (consumer) => new Promise((resolve) => consumer.once('stopped', resolve)),
    );
    single.stop({ abort: true });
    batch.stop({ abort: true });
    await Promise.all(stopped);
    originClient.destroy();
  }

  expect(errorsWhileRunning).toEqual([]);
  expect(processed).toBe(MESSAGES);
  expect(failures).toBeGreaterThan(0);
  expect(successes.size).toBe(MESSAGES);
  expect([...successes.values()].every((count) => count === 1)).toBe(true);
  const left = await server().client.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }),
  );
  expect(left.Attributes).toMatchObject({
    ApproximateNumberOfMessages: '0',
    ApproximateNumberOfMessagesNotVisible: '0',
    ApproximateNumberOfMessagesDelayed: '0',
  });
});
