import {
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueueTagsCommand,
  SetQueueAttributesCommand,
  SQSClient,
  TagQueueCommand,
} from '@aws-sdk/client-sqs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Broker, BrokerTransaction } from '../../src/broker/index.js';
import type { SqlParameter } from '../../src/engine/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { POSTGRES_URL, postgresSkipReason } from '../crash/postgres.js';
import { freshName } from './helpers.js';

// A queue made through /v1 has no SQS metadata row until its first change. Two changes of it
// through two servers of one PostgreSQL storage must each keep the other's, as they do for a
// queue made by CreateQueue: the second waits for the first instead of writing over it.

let skip: string | undefined;
beforeAll(async () => {
  skip = await postgresSkipReason();
});

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/**
 * Holds each metadata change at its read until both servers' changes have read, or a second
 * has passed (one of them waiting for the other's row lock never reads before it commits).
 */
function bothReadFirst() {
  let arrived = 0;
  let release = () => {};
  const together = new Promise<void>((resolve) => {
    release = resolve;
  });
  return async () => {
    arrived += 1;
    if (arrived === 2) release();
    await Promise.race([together, new Promise((resolve) => setTimeout(resolve, 1000))]);
  };
}

/** `real`, whose transactions that change SQS metadata wait at `gate` before reading it. */
function gatedBroker(real: Broker, gate: () => Promise<void>): Broker {
  const transaction = real.transaction.bind(real);
  return Object.assign(Object.create(real) as Broker, {
    transaction: <T>(work: (tx: BrokerTransaction) => Promise<T>) =>
      transaction((tx) => {
        let changing = false;
        const gated = new Proxy(tx, {
          get(target, property) {
            if (property === 'run') {
              return (sql: string, params?: readonly SqlParameter[]) => {
                if (sql.includes('leaseq_sqs_queues set meta = meta')) changing = true;
                return target.run(sql, params);
              };
            }
            if (property === 'query') {
              return async (sql: string, params?: readonly SqlParameter[]) => {
                if (changing && sql.startsWith('select meta from leaseq_sqs_queues')) await gate();
                return target.query(sql, params);
              };
            }
            const value: unknown = Reflect.get(target, property, target);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
        return work(gated);
      }),
  });
}

async function serverOver(broker: Broker): Promise<SQSClient> {
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
  return client;
}

async function openBroker(): Promise<Broker> {
  const broker = await open(POSTGRES_URL);
  closers.push(() => broker.close());
  return broker;
}

describe('SQS metadata of a queue made through /v1, changed through two servers at once', () => {
  it('a TagQueue and a SetQueueAttributes through different servers both stay', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const gate = bothReadFirst();
    const [oneBroker, otherBroker] = [await openBroker(), await openBroker()];
    const name = freshName('made-by-v1');
    await oneBroker.queue(name);
    const one = await serverOver(gatedBroker(oneBroker, gate));
    const other = await serverOver(gatedBroker(otherBroker, gate));
    const { QueueUrl } = await one.send(new GetQueueUrlCommand({ QueueName: name }));
    await Promise.all([
      one.send(new TagQueueCommand({ QueueUrl, Tags: { team: 'billing' } })),
      other.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: { DelaySeconds: '4' } })),
    ]);
    const { Tags } = await one.send(new ListQueueTagsCommand({ QueueUrl }));
    expect(Tags).toEqual({ team: 'billing' });
    const { Attributes } = await other.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['DelaySeconds'] }),
    );
    expect(Attributes).toEqual({ DelaySeconds: '4' });
  });
});
