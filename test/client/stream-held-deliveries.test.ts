import { afterEach, describe, expect, it } from 'vitest';
import type { Broker, Queue, ReceiveOptions } from '../../src/broker/index.js';
import { RemoteBroker } from '../../src/client/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { silentLogger, work } from '../../src/worker/index.js';
import { startTestServer, withWrappedQueues } from '../server/helpers.js';
import { until } from '../until.js';

/**
 * What the stream client holds for its next receive (pushed ahead, leased to it) and what a
 * waiting receive answers: never a job that is gone or dead, what is ready when it is called,
 * and no subscription left behind that nobody ends.
 */
const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A stream client of a fresh server; held deliveries wait a minute before going back. */
async function streamClient() {
  const server = await startTestServer();
  closing.push(() => server.close());
  const client = new RemoteBroker(server.baseUrl, {
    transport: 'stream',
    prefetchIdleMs: 60_000,
  });
  closing.push(() => client.close());
  return { server, client };
}

type Handled = { id: string; at: number };

/** A worker on `queue` (closed after the test) that notes each job it handles, and when. */
async function recordingWorker(queue: Queue, handled: Handled[]): Promise<void> {
  const worker = await work(
    queue,
    async (job) => {
      handled.push({ id: job.id, at: Date.now() });
    },
    { logger: silentLogger },
  );
  closing.push(() => worker.close());
}

/** A server over `broker`, closed (with `real`, under it) after the test; its URL. */
async function serve(broker: Broker, real: Broker): Promise<string> {
  const app = await createApp({ broker, receiptSecret: 'test-secret-of-at-least-32-characters' });
  closing.push(
    () => real.close(),
    () => app.close(),
  );
  return app.listen({ host: '127.0.0.1', port: 0 });
}

/**
 * A server whose subscriptions push their first jobs `lateMs` after answering `subscribed`:
 * `before`, the pump's first receive starts late; else it reserves at once and pushes late
 * (a storage slow to commit).
 */
async function serveLatePushes(
  lateMs: number,
  when: 'before' | 'after',
): Promise<{ url: string; real: Broker }> {
  const real = await open('memory:');
  const broker = withWrappedQueues(real, (queue) =>
    Object.assign(Object.create(queue), {
      receive: async (options: ReceiveOptions) => {
        if (when === 'before') await sleep(lateMs);
        const deliveries = await queue.receive(options);
        if (when === 'after') await sleep(lateMs);
        return deliveries;
      },
    }),
  );
  return { url: await serve(broker, real), real };
}

describe('held deliveries of jobs that ended through this client', () => {
  it('purgeQueue hands out none of the held ones (they go back, stale): the next receive gets a job published after', async () => {
    const { server, client } = await streamClient();
    const jobs = await server.broker.queue('jobs', { visibility: 60_000 });
    const queue = await client.queue('jobs');
    await queue.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    const [a] = await queue.receive({ wait: 2000 });
    expect(a?.id).toBe('a');
    expect(await queue.ack(a?.token ?? 0)).toBe(true);
    // The credit the ack gave back brings `b`, held for the next receive.
    await until(async () => (await jobs.stats()).active === 1, { what: 'one active job' });
    expect(await queue.purgeQueue()).toMatchObject({ ready: 1, active: 1 });
    await queue.publish({ id: 'd' });
    const started = Date.now();
    const next = await queue.receive({ wait: 2000 });
    expect(next.map((delivery) => delivery.id)).toEqual(['d']);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await queue.ack(next[0]?.token ?? 0)).toBe(true);
    // `b` went back, its nack stale (its lease ended with the purge); it changed nothing.
    await until(async () => (await jobs.stats()).staleNacks === 1, { what: 'the stale nack' });
    expect(await jobs.stats()).toMatchObject({ nacks: 0, acks: 2, ready: 0, active: 0 });
  });

  it('cancel hands out no held delivery of that job (it goes back, stale), and a ready job comes at once in its place', async () => {
    const { server, client } = await streamClient();
    const jobs = await server.broker.queue('jobs', { visibility: 60_000 });
    const queue = await client.queue('jobs');
    await queue.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
    const [a] = await queue.receive({ wait: 2000 });
    expect(a?.id).toBe('a');
    expect(await queue.ack(a?.token ?? 0)).toBe(true);
    await until(async () => (await jobs.stats()).active === 1, { what: 'one active job' });
    expect(await queue.cancel('b')).toBe(true);
    expect(await jobs.job('b')).toMatchObject({ state: 'dead', reason: 'cancelled' });
    // The server counts `b` against the prefetch until its lease would have ended (a minute):
    // the client asks for room beside it rather than wait that long.
    const started = Date.now();
    const next = await queue.receive({ wait: 5000 });
    expect(next.map((delivery) => delivery.id)).toEqual(['c']);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await queue.ack(next[0]?.token ?? 0)).toBe(true);
    // A cancel of another job leaves what is held alone: `d`, pushed after that ack.
    await until(async () => (await jobs.stats()).active === 1, { what: 'one active job' });
    await queue.publish({ id: 'e' });
    expect(await queue.cancel('e')).toBe(true);
    const [d] = await queue.receive({ wait: 2000 });
    expect(d?.id).toBe('d');
    expect(await queue.ack(d?.token ?? 0)).toBe(true);
    // `b` and `e` (if it was pushed before its cancel) went back, their nacks stale.
    await until(
      async () => (await jobs.stats()).staleNacks === (await jobs.stats()).deliveries - 3,
      { what: 'a stale nack for each delivery that went back' },
    );
    expect(await jobs.stats()).toMatchObject({ nacks: 0, acks: 3, ready: 0, active: 0 });
    expect(await jobs.job('b')).toMatchObject({ state: 'dead', reason: 'cancelled' });
  });
});

describe('a receive whose signal has aborted', () => {
  it('answers at once with what is ready, as the in-process receive does, and opens no subscription', async () => {
    const { server, client } = await streamClient();
    const jobs = await server.broker.queue('jobs', { visibility: 60_000 });
    const queue = await client.queue('jobs');
    const local = await open('memory:');
    closing.push(() => local.close());
    const inProcess = await local.queue('jobs');
    const overHttp = new RemoteBroker(server.baseUrl, { transport: 'http' });
    closing.push(() => overHttp.close());
    const plain = await overHttp.queue('plain');
    const stopped = AbortSignal.abort();
    for (const each of [queue, inProcess, plain]) {
      const started = Date.now();
      expect(await each.receive({ wait: 5000, signal: stopped })).toEqual([]);
      expect(Date.now() - started).toBeLessThan(1000);
      await each.publish({ id: 'ready' });
      const taken = await each.receive({ wait: 5000, signal: stopped });
      expect(taken.map((delivery) => delivery.id)).toEqual(['ready']);
      expect(await each.ack(taken[0]?.token ?? 0)).toBe(true);
    }
    // Nothing subscribed: a job published now stays ready for any consumer.
    await queue.publish({ id: 'later' });
    await sleep(300);
    expect(await jobs.stats()).toMatchObject({ ready: 1, active: 0, deliveries: 1 });
  });

  it('aborted as the first connection opens, leaves no subscription behind', async () => {
    const { server, client } = await streamClient();
    const jobs = await server.broker.queue('jobs', { visibility: 60_000 });
    const queue = await client.queue('jobs');
    const stop = new AbortController();
    // The queue was made over HTTP: the stream connects for this receive, aborted meanwhile.
    const receiving = queue.receive({ wait: 5000, signal: stop.signal });
    stop.abort();
    expect(await receiving).toEqual([]);
    await jobs.publish({ id: 'later' });
    await sleep(300);
    expect(await jobs.stats()).toMatchObject({ ready: 1, active: 0, deliveries: 0 });
    // A later receive still subscribes.
    const [taken] = await queue.receive({ wait: 2000 });
    expect(taken).toMatchObject({ id: 'later', deliveryCount: 1 });
  });
});

describe('a short wait with jobs ready', () => {
  it.each([
    ['the server starts its first reserve late', 'before'],
    ['the server pushes what it reserved late', 'after'],
  ] as const)('answers them, not empty, when %s', async (_, when) => {
    const { url } = await serveLatePushes(150, when);
    const client = new RemoteBroker(url, { transport: 'stream' });
    closing.push(() => client.close());
    const queue = await client.queue('jobs');
    await queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    const taken = await queue.receive({ wait: 10 });
    expect(taken.map((delivery) => [delivery.id, delivery.deliveryCount])).toEqual([['a', 1]]);
    expect(await queue.ack(taken[0]?.token ?? 0)).toBe(true);
    await until(async () => (await queue.stats()).active === 0, { what: 'no active job' });
    expect(await queue.stats()).toMatchObject({ ready: 1, acks: 1, dead: 0 });
  });

  it('answers them when its signal says the consumer goes on', async () => {
    const { url } = await serveLatePushes(150, 'before');
    const client = new RemoteBroker(url, { transport: 'stream' });
    closing.push(() => client.close());
    const queue = await client.queue('jobs');
    await queue.publish({ id: 'a' });
    const consumer = new AbortController();
    const taken = await queue.receive({ wait: 10, signal: consumer.signal });
    expect(taken.map((delivery) => delivery.id)).toEqual(['a']);
    expect(await queue.ack(taken[0]?.token ?? 0)).toBe(true);
    consumer.abort();
  });

  it('a loop of waits of 1 ms takes every job, one per call', async () => {
    const { client } = await streamClient();
    const queue = await client.queue('jobs', { visibility: 30_000 });
    await queue.publishBatch(Array.from({ length: 5 }, (_, n) => ({ id: `j${n}` })));
    const taken: string[] = [];
    for (let call = 0; call < 5; call += 1) {
      const [delivery] = await queue.receive({ wait: 1 });
      taken.push(delivery?.id ?? 'none');
      if (delivery !== undefined) expect(await queue.ack(delivery.token)).toBe(true);
    }
    expect(taken).toEqual(['j0', 'j1', 'j2', 'j3', 'j4']);
  });

  it('a wait that runs out on an empty queue still answers empty, and leaves no subscription', async () => {
    const { server, client } = await streamClient();
    const jobs = await server.broker.queue('jobs', { visibility: 60_000 });
    const queue = await client.queue('jobs');
    expect(await queue.receive({ wait: 20 })).toEqual([]);
    await jobs.publish({ id: 'later' });
    await sleep(300);
    expect(await jobs.stats()).toMatchObject({ ready: 1, active: 0, deliveries: 0 });
  });
});

describe('a receive of other settings before a work() on the same queue', () => {
  it('does not keep the next job from the waiting worker: it goes to the worker at once, not after prefetchIdleMs', async () => {
    const { server, client } = await streamClient();
    const jobs = await server.broker.queue('jobs', { visibility: 30_000 });
    const queue = await client.queue('jobs');
    await queue.publish({ id: 'first' });
    const [first] = await queue.receive({ wait: 2000 });
    expect(first?.id).toBe('first');
    expect(await queue.ack(first?.token ?? 0)).toBe(true);
    const handled: Handled[] = [];
    await recordingWorker(queue, handled);
    // The worker's receive waits (its own subscription); the one-off receive's is still open.
    await sleep(300);
    const publishedAt = Date.now();
    await jobs.publish({ id: 'second' });
    await until(async () => handled.length === 1, { what: 'the job handled', timeout: 10_000 });
    expect(handled[0]?.id).toBe('second');
    expect((handled[0]?.at ?? Number.POSITIVE_INFINITY) - publishedAt).toBeLessThan(3000);
  });
});

describe('a receive with a signal before a work() on the same queue', () => {
  // A one-off receive that passes a signal (a request's, an app's) keeps its subscription open
  // for a consumer that may come back; what it is pushed meanwhile goes to the waiting worker
  // within SHARE_AFTER_MS, not after prefetchIdleMs (a minute here).
  async function setUp() {
    const { server, client } = await streamClient();
    const jobs = await server.broker.queue('jobs', { visibility: 30_000 });
    const queue = await client.queue('jobs');
    const app = new AbortController();
    closing.push(async () => app.abort());
    await queue.publish({ id: 'first' });
    const [first] = await queue.receive({ wait: 2000, signal: app.signal });
    expect(first?.id).toBe('first');
    expect(await queue.ack(first?.token ?? 0)).toBe(true);
    const handled: Handled[] = [];
    return { jobs, handled, startWorker: () => recordingWorker(queue, handled) };
  }

  it('a job pushed to it before the worker waits goes to the worker', async () => {
    const { jobs, handled, startWorker } = await setUp();
    const publishedAt = Date.now();
    await jobs.publish({ id: 'second' });
    await sleep(50);
    await startWorker();
    await until(async () => handled.length === 1, { what: 'the job handled', timeout: 10_000 });
    expect(handled[0]?.id).toBe('second');
    expect((handled[0]?.at ?? Number.POSITIVE_INFINITY) - publishedAt).toBeLessThan(1500);
  });

  it('a job pushed to it while the worker waits goes to the worker', async () => {
    const { jobs, handled, startWorker } = await setUp();
    await startWorker();
    await sleep(300);
    // Five, so that some land on the receive's subscription whichever the server picks first.
    const publishedAt = Date.now();
    await jobs.publishBatch(Array.from({ length: 5 }, (_, n) => ({ id: `next-${n}` })));
    await until(async () => handled.length === 5, { what: 'five jobs handled', timeout: 10_000 });
    const last = Math.max(...handled.map((each) => each.at));
    expect(last - publishedAt).toBeLessThan(1500);
  });
});

describe('pushes whose lease ends before they could be given back', () => {
  it('end the subscription while no receive waits: the job is not pushed again and again until it dies', async () => {
    // Each push 5 ms after its reserve: with leases of 1 ms, over as it arrives.
    const { url, real } = await serveLatePushes(5, 'after');
    const client = new RemoteBroker(url, { transport: 'stream', prefetchIdleMs: 60_000 });
    closing.push(() => client.close());
    const jobs = await real.queue('jobs', { visibility: 5000, maxDeliveries: 30 });
    const queue = await client.queue('jobs');
    await queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    const [a] = await queue.receive({ wait: 2000 });
    expect(a?.id).toBe('a');
    // Leases of 1 ms: over before a push reaches the client. The extend ends `a`'s (R10), and
    // its credit back brings the subscription a job it can neither hand out nor give back.
    await real.updateQueue('jobs', { maxLease: 1 });
    await sleep(10);
    await queue.extend(a?.token ?? 0, 1000);
    // The server sees the lease over at its next look, within a second.
    await sleep(1500);
    const { deliveries } = await jobs.stats();
    await sleep(300);
    expect(await jobs.stats()).toMatchObject({ deliveries, dead: 0 });
    // `a` burnt the deliveries pushed until the unsubscribe arrived (a few), not all 30 of its
    // own and then `b`'s: `b`, behind it, was never pushed.
    expect((await jobs.job('a'))?.deliveryCount).toBeLessThan(30);
    expect(await jobs.job('b')).toMatchObject({ state: 'ready', deliveryCount: 0 });
  });
});

describe('a stream receive waiting as the client closes', () => {
  it('answers empty at the close, even while its subscribe is still on its way', async () => {
    for (let round = 0; round < 5; round++) {
      const { client } = await streamClient();
      const queue = await client.queue(`closing-${round}`);
      const started = Date.now();
      const answered = queue.receive({ wait: 20_000 }).then((deliveries) => ({
        deliveries,
        ms: Date.now() - started,
      }));
      // Round 0 closes at once, with the subscribe unsent; the others as it travels.
      if (round > 0) await sleep(round);
      await client.close();
      const { deliveries, ms } = await answered;
      expect(deliveries).toEqual([]);
      expect(ms).toBeLessThan(5_000);
    }
  });

  it('answers empty at the close when it receives at most once, its look on its way or between two', async () => {
    for (const pause of [0, 150]) {
      const { client } = await streamClient();
      const queue = await client.queue(`auto-closing-${pause}`);
      const answered = queue.receive({ wait: 20_000, ack: 'auto' }).catch((error) => error);
      // 0: closed as its first look travels; 150: after a look found nothing.
      await sleep(pause);
      await client.close();
      expect(await answered).toEqual([]);
    }
  });

  it('answers the job its at-most-once look took as the client closed: it is not lost', async () => {
    const { server, client } = await streamClient();
    const jobs = await server.broker.queue('taken');
    const queue = await client.queue('taken');
    await queue.stats(); // the connection is open
    await queue.publish({ id: 'a' });
    const answered = queue.receive({ wait: 20_000, ack: 'auto' }).catch((error) => error);
    // Its look is sent (the calls of a tick go out as the tick ends), its answer not in yet.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    await client.close();
    expect(await answered).toMatchObject([{ id: 'a' }]);
    expect(await jobs.stats()).toMatchObject({ ready: 0, autoAcked: 1 });
  });
});

describe('held deliveries as the client closes twice at once', () => {
  it('go back before either close resolves: the second close shares the first, not cut it short', async () => {
    const { server, client } = await streamClient();
    const jobs = await server.broker.queue('jobs', { visibility: 60_000 });
    const queue = await client.queue('jobs');
    await queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    const [a] = await queue.receive({ wait: 2000 });
    expect(a?.id).toBe('a');
    expect(await queue.ack(a?.token ?? 0)).toBe(true);
    // The credit the ack gave back brings `b`, held for the next receive.
    await until(async () => (await jobs.stats()).active === 1, { what: 'one active job' });
    await Promise.all([client.close(), client.close()]);
    // Given back unworked by the close, not left leased for its minute.
    expect(await jobs.stats()).toMatchObject({ ready: 1, active: 0 });
    expect(await jobs.job('b')).toMatchObject({ state: 'ready', deliveryCount: 0 });
  });
});

describe('held deliveries of a subscription the server ended with an error', () => {
  it('are not handed out after the queue was deleted: the next receive says NOT_FOUND', async () => {
    const { server, client } = await streamClient();
    const queue = await client.queue('deleted', { visibility: 60_000 });
    await queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    const [first] = await queue.receive({ wait: 1000 });
    expect(first?.id).toBe('a');
    // Acked, a gives its credit back: b is pushed and held for the next receive.
    expect(await queue.ack(first?.token ?? 0)).toBe(true);
    const jobs = await server.broker.queue('deleted');
    await until(async () => (await jobs.stats()).active === 1, { what: 'one active job' });
    // Deleted by another client of the server: it ends the subscription, NOT_FOUND.
    const other = new RemoteBroker(server.baseUrl, { transport: 'http' });
    closing.push(() => other.close());
    expect(await other.deleteQueue('deleted')).toBe(true);
    await sleep(200);
    await expect(queue.receive()).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
