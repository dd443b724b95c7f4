import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ListQueueTagsCommand,
  SetQueueAttributesCommand,
  SQSClient,
  TagQueueCommand,
  UntagQueueCommand,
} from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Broker } from '../../src/broker/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { failure, freshName, useSqsEngines } from './helpers.js';

const engines = await useSqsEngines();

/** A broker whose first `ensureQueue` waits at `gate` (before or after creating the queue). */
function gatedCreate(real: Broker, where: 'before' | 'after') {
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let reached = () => {};
  const reachedGate = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const ensureQueue = real.ensureQueue?.bind(real);
  if (ensureQueue === undefined) throw new Error('the broker has no ensureQueue');
  let first = true;
  const broker: Broker = Object.assign(Object.create(real), {
    ensureQueue: async (...args: Parameters<typeof ensureQueue>) => {
      const held = first;
      first = false;
      if (held && where === 'before') {
        reached();
        await gate;
      }
      const result = await ensureQueue(...args);
      if (held && where === 'after') {
        reached();
        await gate;
      }
      return result;
    },
  });
  return { broker, reachedGate, release };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** An SQS server over `broker` (left open: the test closes it), and an SDK client of it. */
async function serverOver(broker: Broker): Promise<{ client: SQSClient; baseUrl: string }> {
  const app = await createApp({
    receiptSecret: 'test-secret-of-at-least-32-characters',
    broker,
    sqs: {},
  });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  const client = new SQSClient({
    endpoint: `${baseUrl}/sqs`,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
  });
  closers.push(async () => {
    client.destroy();
    await app.close();
  });
  return { client, baseUrl };
}

async function openBroker(url: string): Promise<Broker> {
  const broker = await open(url);
  closers.push(() => broker.close());
  return broker;
}

/** Settles with what the promise came to, so that a test can look before awaiting it. */
function settle<T>(promise: Promise<T>): Promise<{ ok: T } | { error: unknown }> {
  return promise.then(
    (ok) => ({ ok }),
    (error: unknown) => ({ error }),
  );
}

/** A moment for a request sent to get as far as it can on its own. */
const aMoment = () => new Promise((resolve) => setTimeout(resolve, 200));

for (const engine of engines) {
  describe.skipIf(engine.skipReason !== undefined)(`over ${engine.name}`, () => {
    it('a CreateQueue that arrives while the same CreateQueue is making the queue answers its URL', async () => {
      const { broker, reachedGate, release } = gatedCreate(await openBroker(engine.url), 'after');
      const { client } = await serverOver(broker);
      const input = {
        QueueName: `${freshName('twin')}.fifo`,
        Attributes: { FifoQueue: 'true', DelaySeconds: '2' },
      };
      const first = settle(client.send(new CreateQueueCommand(input)));
      await reachedGate;
      const second = settle(client.send(new CreateQueueCommand(input)));
      await Promise.race([second, aMoment()]);
      release();
      const answers = [await first, await second];
      for (const answer of answers) expect(answer).toHaveProperty('ok.QueueUrl');
      const QueueUrl = (answers[0] as { ok: { QueueUrl: string } }).ok.QueueUrl;
      const { Attributes } = await client.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }),
      );
      expect(Attributes).toMatchObject({ FifoQueue: 'true', DelaySeconds: '2' });
    });

    it('of two CreateQueue calls that differ only in an attribute leaseq keeps beside the queue, the later one is QueueNameExists', async () => {
      const { broker, reachedGate, release } = gatedCreate(await openBroker(engine.url), 'before');
      const { client } = await serverOver(broker);
      const QueueName = freshName('rival');
      const first = settle(
        client.send(new CreateQueueCommand({ QueueName, Attributes: { DelaySeconds: '2' } })),
      );
      await reachedGate;
      const second = settle(
        client.send(new CreateQueueCommand({ QueueName, Attributes: { DelaySeconds: '5' } })),
      );
      await Promise.race([second, aMoment()]);
      release();
      const answers = [await first, await second];
      const succeeded = answers.filter((answer) => 'ok' in answer);
      expect(succeeded).toHaveLength(1);
      const QueueUrl = (succeeded[0] as { ok: { QueueUrl: string } }).ok.QueueUrl;
      const { Attributes } = await client.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['DelaySeconds'] }),
      );
      const winner = answers[0] === succeeded[0] ? '2' : '5';
      expect(Attributes?.DelaySeconds).toBe(winner);
      const loser = answers.find((answer) => !('ok' in answer)) as { error: unknown };
      expect((await failure(Promise.reject(loser.error))).name).toBe('QueueNameExists');
    });

    it.skipIf(engine.name === 'memory')(
      'a CreateQueue that finds the queue made meanwhile by another server checks its attributes, never overwriting them',
      async () => {
        const shared = await openBroker(engine.url);
        const gated = gatedCreate(shared, 'before');
        const one = await serverOver(gated.broker);
        const other = await serverOver(shared);
        const QueueName = freshName('node');
        const first = settle(
          one.client.send(new CreateQueueCommand({ QueueName, Attributes: { DelaySeconds: '2' } })),
        );
        await gated.reachedGate;
        const made = await other.client.send(
          new CreateQueueCommand({
            QueueName,
            Attributes: { DelaySeconds: '5' },
            tags: { by: 'other' },
          }),
        );
        gated.release();
        const answer = await first;
        expect(answer).toHaveProperty('error');
        expect((await failure(Promise.reject((answer as { error: unknown }).error))).name).toBe(
          'QueueNameExists',
        );
        const QueueUrl = made.QueueUrl as string;
        const { Attributes } = await other.client.send(
          new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['DelaySeconds'] }),
        );
        expect(Attributes?.DelaySeconds).toBe('5');
        const { Tags } = await other.client.send(new ListQueueTagsCommand({ QueueUrl }));
        expect(Tags).toEqual({ by: 'other' });
      },
    );

    it('concurrent TagQueue, UntagQueue and SetQueueAttributes calls each keep what the others changed', async () => {
      const { client } = await serverOver(await openBroker(engine.url));
      const { QueueUrl } = await client.send(
        new CreateQueueCommand({ QueueName: freshName('tags'), tags: { gone: 'soon' } }),
      );
      const keys = Array.from({ length: 10 }, (_, index) => `k${index}`);
      await Promise.all([
        ...keys.map((key) => client.send(new TagQueueCommand({ QueueUrl, Tags: { [key]: key } }))),
        client.send(new UntagQueueCommand({ QueueUrl, TagKeys: ['gone'] })),
        client.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: { DelaySeconds: '4' } })),
        client.send(
          new SetQueueAttributesCommand({
            QueueUrl,
            Attributes: { ReceiveMessageWaitTimeSeconds: '3' },
          }),
        ),
      ]);
      const { Tags } = await client.send(new ListQueueTagsCommand({ QueueUrl }));
      expect(Tags).toEqual(Object.fromEntries(keys.map((key) => [key, key])));
      const { Attributes } = await client.send(
        new GetQueueAttributesCommand({
          QueueUrl,
          AttributeNames: ['DelaySeconds', 'ReceiveMessageWaitTimeSeconds'],
        }),
      );
      expect(Attributes).toEqual({ DelaySeconds: '4', ReceiveMessageWaitTimeSeconds: '3' });
    });

    it.skipIf(engine.name === 'memory')(
      'TagQueue calls through two servers of one storage keep every tag',
      async () => {
        const shared = await openBroker(engine.url);
        const servers = [await serverOver(shared), await serverOver(shared)];
        const [first] = servers;
        const { QueueUrl } = await (first as { client: SQSClient }).client.send(
          new CreateQueueCommand({ QueueName: freshName('nodes') }),
        );
        const keys = Array.from({ length: 10 }, (_, index) => `k${index}`);
        await Promise.all(
          keys.map((key, index) =>
            (servers[index % 2] as { client: SQSClient }).client.send(
              new TagQueueCommand({ QueueUrl, Tags: { [key]: key } }),
            ),
          ),
        );
        const { Tags } = await (first as { client: SQSClient }).client.send(
          new ListQueueTagsCommand({ QueueUrl }),
        );
        expect(Tags).toEqual(Object.fromEntries(keys.map((key) => [key, key])));
      },
    );
  });
}
