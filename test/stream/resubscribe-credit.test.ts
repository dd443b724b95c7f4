import { afterEach, describe, expect, it } from 'vitest';
import type { Broker, Queue, ReceiveOptions } from '../../src/broker/index.js';
import { RemoteBroker } from '../../src/client/index.js';
import { StorageUnavailableError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { withWrappedQueues } from '../server/helpers.js';

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

const SECRET = 'test-secret-of-at-least-32-characters';

/** A server over `broker` on `port` (0: any free one); closing it leaves the broker open. */
async function serve(broker: Broker, port = 0) {
  const app = await createApp({ receiptSecret: SECRET, broker });
  const baseUrl = await app.listen({ host: '127.0.0.1', port });
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= app.close();
    return closed;
  };
  closing.push(close);
  return { baseUrl, port: Number(new URL(baseUrl).port), close };
}

/**
 * A consumer that received `old0`…`old3` one at a time (as loops of `receive({ max: 1 })` do)
 * and holds them, unsettled, with six more jobs published behind them.
 */
async function consumerHoldingFour(served: (broker: Broker) => Broker = (broker) => broker) {
  const broker = await open('memory:');
  closing.push(() => broker.close());
  const jobs = await broker.queue('jobs', { visibility: 60_000 });
  await jobs.publishBatch(Array.from({ length: 4 }, (_, n) => ({ id: `old${n}` })));
  const server = await serve(served(broker));
  const client = new RemoteBroker(server.baseUrl, { transport: 'stream', prefetchIdleMs: 60_000 });
  closing.push(() => client.close());
  const queue = await client.queue('jobs');
  const consumer = new AbortController();
  const held: string[] = [];
  for (let n = 0; n < 4; n += 1) {
    const [delivery] = await queue.receive({ max: 1, wait: 5000, signal: consumer.signal });
    held.push(delivery?.id ?? 'none');
  }
  expect(held).toEqual(['old0', 'old1', 'old2', 'old3']);
  expect(await jobs.stats()).toMatchObject({ active: 4, ready: 0 });
  return { broker, jobs, server, queue, consumer };
}

/** One receive of one job on a new subscription; then what the server leased in all. */
async function receiveOneMore(jobs: Queue, queue: Queue, signal: AbortSignal) {
  // The receive waits on its subscription before the jobs come.
  const receiving = queue.receive({ max: 1, wait: 5000, signal });
  await new Promise((resolve) => setTimeout(resolve, 200));
  await jobs.publishBatch(Array.from({ length: 6 }, (_, n) => ({ id: `new${n}` })));
  const taken = await receiving;
  expect(taken.map((delivery) => delivery.id)).toEqual(['new0']);
  // A stats call over the same connection: pushes the server made before answering it are in.
  await queue.stats();
  return jobs.stats();
}

describe('a subscription opened again asks for what its receives want', () => {
  it('after the server restarted, deliveries in hand from before do not raise its prefetch', async () => {
    const { broker, jobs, server, queue, consumer } = await consumerHoldingFour();
    await server.close();
    // The client has seen its connection end (a call fails) before the server is back.
    await expect(queue.stats()).rejects.toMatchObject({
      code: expect.stringMatching(/^(CONNECTION_LOST|STORAGE_UNAVAILABLE|CLOSED)$/),
    });
    // Back on the same port, over the same storage and secret: the client reconnects.
    await serve(broker, server.port);
    const stats = await receiveOneMore(jobs, queue, consumer.signal);
    // The four of before, still leased to the consumer, and the one it took: nothing held.
    expect(stats).toMatchObject({ active: 5, ready: 5 });
  });

  it('on the same connection, after its consumer stopped, the same holds', async () => {
    const { jobs, queue, consumer } = await consumerHoldingFour();
    // The consumer stops: its subscription ends, holding nothing; the four stay in hand.
    consumer.abort();
    await queue.stats();
    const next = new AbortController();
    const stats = await receiveOneMore(jobs, queue, next.signal);
    expect(stats).toMatchObject({ active: 5, ready: 5 });
  });

  it('after the server ended it for a storage failure, the same holds', async () => {
    let failing = false;
    // The server's receives fail while `failing`, as over a storage that is down.
    const served = (broker: Broker) =>
      withWrappedQueues(broker, (queue) =>
        Object.assign(Object.create(queue), {
          receive: (options: ReceiveOptions) =>
            failing
              ? Promise.reject(new StorageUnavailableError('the storage is down (test)'))
              : queue.receive(options),
        }),
      );
    const { jobs, queue, consumer } = await consumerHoldingFour(served);
    failing = true;
    // A fifth receive raises the credit; the server's receive fails and it ends the subscription.
    await expect(
      queue.receive({ max: 1, wait: 5000, signal: consumer.signal }),
    ).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
    failing = false;
    const stats = await receiveOneMore(jobs, queue, consumer.signal);
    expect(stats).toMatchObject({ active: 5, ready: 5 });
  });
});
