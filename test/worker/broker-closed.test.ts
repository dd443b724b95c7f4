import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Broker } from '../../src/broker/index.js';
import { RemoteBroker } from '../../src/client/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { Gate, Harness, type ManualClock } from '../../src/testing/index.js';
import { fetchRetryJitter } from '../../src/worker/fetch-retry.js';
import {
  type JobContext,
  jsonLogger,
  type OutcomeRecord,
  type Worker,
  type WorkerErrorSource,
  work,
} from '../../src/worker/index.js';
import { injectFetch } from '../conformance/remote-engine.js';
import { TcpProxy } from '../faults/tcp-proxy.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { until } from '../until.js';

const dir = temporaryDirectory('leaseq-broker-closed-');
let files = 0;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  fetchRetryJitter.random = Math.random;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** What a worker told its listeners and its logger. */
interface Seen {
  errors: { during: WorkerErrorSource; code: unknown; message: string }[];
  outcomes: OutcomeRecord[];
  closed: unknown[];
  lines: { msg: string; code?: string }[];
}

/** A worker over `h.queue` on the harness's clock, with all it says kept. */
async function watchedWorker(
  h: Harness,
  handler: (job: unknown, ctx: JobContext) => Promise<void>,
): Promise<{ worker: Worker; seen: Seen }> {
  const seen: Seen = { errors: [], outcomes: [], closed: [], lines: [] };
  const worker = await work(h.queue, handler, {
    clock: h.clock,
    concurrency: 2,
    logger: jsonLogger({ level: 'error', write: (line) => seen.lines.push(JSON.parse(line)) }),
  });
  cleanups.push(() => worker.close({ timeout: 0 }));
  worker.on('error', (error, during) =>
    seen.errors.push({
      during,
      code: (error as { code?: unknown }).code,
      message: (error as Error).message,
    }),
  );
  worker.on('outcome', (record) => seen.outcomes.push(record));
  worker.on('closed', (cause) => seen.closed.push(cause));
  return { worker, seen };
}

async function harness(url: string): Promise<Harness> {
  const h = await Harness.open({ url, queueOptions: { visibility: 60_000, maxDeliveries: 3 } });
  cleanups.push(() => h.close());
  return h;
}

const inProcess = [
  { name: 'memory', url: () => 'memory:' },
  {
    name: 'SQLite',
    url: () => {
      files += 1;
      return `sqlite:${join(dir, `closed-${files}.db`)}`;
    },
  },
];

for (const engine of inProcess) {
  describe(`a worker whose in-process ${engine.name} broker is closed under it`, () => {
    it('stops fetching at once, lets its running handler finish, then closes and says why', async () => {
      const h = await harness(engine.url());
      const gate = new Gate();
      const { worker, seen } = await watchedWorker(h, () => gate.pass());
      await h.queue.publish({ id: 'a' });
      await h.flush();
      await gate.arrivedAt(1);
      await h.broker.close();
      await h.flush();
      // The waiting receive ended; the next one failed with CLOSED: reported once, not retried.
      expect(worker.state).toBe('closing');
      expect(seen.errors).toEqual([
        { during: 'fetch', code: 'CLOSED', message: expect.any(String) },
      ]);
      await h.advance(20_000, { step: 1000 });
      expect(worker.state).toBe('closing');
      expect(worker.metrics().fetchErrors).toBe(1);
      expect(seen.closed).toEqual([]);
      // The handler finishes within the grace period; its ack fails as the broker's calls do.
      gate.open();
      await h.flush();
      expect(seen.outcomes).toMatchObject([
        { id: 'a', outcome: 'lease-lost', reason: 'settle-failed' },
      ]);
      expect(worker.state).toBe('closed');
      expect(seen.closed).toHaveLength(1);
      expect(seen.closed[0]).toMatchObject({ code: 'CLOSED' });
      expect(seen.lines.map((line) => [line.msg, line.code])).toEqual([
        ['worker fetch failed', 'CLOSED'],
        ['worker closing: its broker was closed', 'CLOSED'],
        ['worker settle failed', 'CLOSED'],
      ]);
      // close() after it shares the close that happened.
      await worker.close();
      await expect(worker.runOnce()).rejects.toMatchObject({ code: 'CLOSED' });
    });

    it('ends within the default grace period and a second of give-back when a handler never returns', async () => {
      const h = await harness(engine.url());
      const signals: AbortSignal[] = [];
      const { worker, seen } = await watchedWorker(h, (_job, ctx) => {
        signals.push(ctx.signal);
        return new Promise(() => {});
      });
      await h.queue.publish({ id: 'a' });
      await h.flush();
      expect(signals).toHaveLength(1);
      await h.broker.close();
      await h.flush();
      await h.advance(29_000, { step: 1000 });
      expect(worker.state).toBe('closing');
      expect(signals[0]?.aborted).toBe(false);
      await h.advance(2000, { step: 500 });
      expect(worker.state).toBe('closed');
      expect(signals[0]?.reason).toMatchObject({ code: 'WORKER_CLOSING' });
      expect(seen.closed).toEqual([expect.objectContaining({ code: 'CLOSED' })]);
      expect(worker.metrics().fetchErrors).toBe(1);
    });

    it('a close({ timeout: 0 }) of its own cuts the grace period of a worker closing by itself', async () => {
      const h = await harness(engine.url());
      const signals: AbortSignal[] = [];
      const { worker, seen } = await watchedWorker(h, (_job, ctx) => {
        signals.push(ctx.signal);
        return new Promise(() => {});
      });
      await h.queue.publish({ id: 'a' });
      await h.flush();
      await h.broker.close();
      await h.flush();
      expect(worker.state).toBe('closing');
      const closing = worker.close({ timeout: 0 });
      await h.advance(1000, { step: 250 });
      await closing;
      expect(worker.state).toBe('closed');
      expect(signals[0]?.reason).toMatchObject({ code: 'WORKER_CLOSING' });
      expect(seen.closed).toEqual([expect.objectContaining({ code: 'CLOSED' })]);
    });
  });
}

it('a worker closed by close() gets its closed event with no cause, once', async () => {
  const h = await harness('memory:');
  const { worker, seen } = await watchedWorker(h, async () => {});
  await worker.close();
  await worker.close();
  expect(seen.closed).toEqual([undefined]);
  expect(seen.errors).toEqual([]);
});

/**
 * A remote broker over Fastify's inject, in front of a memory engine on the harness's clock;
 * while `shuttingDown.on`, every receive is answered as a server shutting down answers
 * (503 CLOSED).
 */
function overHttp(shuttingDown: { on: boolean; refused: number }) {
  return async (clock: ManualClock): Promise<Broker> => {
    const broker = await open('memory:', { clock });
    const app = await createApp({ broker, receiptSecret: 'worker-suite-secret-of-32-characters' });
    await app.ready();
    cleanups.push(() => app.close().finally(() => broker.close()));
    const inject = injectFetch(app);
    const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
      if (shuttingDown.on && String(input).includes('/receive')) {
        shuttingDown.refused += 1;
        const body = { error: { code: 'CLOSED', message: 'the server is shutting down' } };
        return new Response(JSON.stringify(body), {
          status: 503,
          headers: { 'content-type': 'application/json' },
        });
      }
      return inject(input, init);
    }) as typeof globalThis.fetch;
    return new RemoteBroker('http://broker-closed.invalid', { fetch });
  };
}

describe('a worker over a server', () => {
  it('goes on retrying while the server answers CLOSED (shutting down), and works once it is back', async () => {
    fetchRetryJitter.random = () => 0.5;
    const shuttingDown = { on: true, refused: 0 };
    const h = await Harness.open({
      connect: overHttp(shuttingDown),
      queueOptions: { visibility: 60_000 },
    });
    cleanups.push(() => h.close());
    const { worker, seen } = await watchedWorker(h, async () => {});
    await h.flush();
    await h.advance(10_000, { step: 100 });
    expect(shuttingDown.refused).toBeGreaterThanOrEqual(5);
    expect(new Set(seen.errors.map((error) => `${error.during} ${error.code}`))).toEqual(
      new Set(['fetch CLOSED']),
    );
    expect(worker.state).toBe('running');
    expect(seen.closed).toEqual([]);
    shuttingDown.on = false;
    await h.queue.publish({ id: 'a' });
    // Retries back off to at most 30 s.
    await h.advance(31_000, { step: 1000 });
    expect(seen.outcomes).toMatchObject([{ id: 'a', outcome: 'acked' }]);
    expect(worker.state).toBe('running');
  });

  it('closes when its own remote client is closed in this process', async () => {
    const h = await Harness.open({
      connect: overHttp({ on: false, refused: 0 }),
      queueOptions: { visibility: 60_000 },
    });
    cleanups.push(() => h.close());
    const { worker, seen } = await watchedWorker(h, async () => {});
    await h.flush();
    await h.broker.close();
    await h.advance(1000, { step: 100 });
    expect(worker.state).toBe('closed');
    expect(seen.closed).toEqual([expect.objectContaining({ code: 'CLOSED' })]);
    expect(worker.metrics().fetchErrors).toBe(1);
  });

  for (const transport of ['http', 'stream'] as const) {
    it(`over ${transport}, keeps working through a restart of the server behind its address`, async () => {
      const inner = await open('memory:');
      cleanups.push(() => inner.close());
      // Clients reach the server through a proxy on a port of its own, so a restart listens on
      // whatever port is free: the old one may meanwhile be some other socket's.
      const proxy = new TcpProxy(0);
      const address = await proxy.listen();
      cleanups.push(() => proxy.close());
      const serve = async () => {
        const app = await createApp({
          broker: inner,
          receiptSecret: 'worker-suite-secret-of-32-characters',
        });
        // Holds the shutdown once it began (requests are answered CLOSED) until opened.
        const held = new Gate();
        app.addHook('preClose', () => held.pass());
        await app.listen({ host: '127.0.0.1', port: 0 });
        proxy.retarget((app.server.address() as { port: number }).port);
        cleanups.push(() => {
          held.open();
          return app.close();
        });
        return { app, held };
      };
      const first = await serve();
      const client = new RemoteBroker(`http://${address}`, { transport, timeoutMs: 2000 });
      cleanups.push(() => client.close());
      const queue = await client.queue('restarts', { visibility: 60_000 });
      const done: string[] = [];
      const codes: unknown[] = [];
      const closed: unknown[] = [];
      const worker = await work(queue, async (job) => void done.push(job.id), {
        wait: 1000,
        logger: jsonLogger({ level: 'error', write: () => {} }),
      });
      cleanups.push(() => worker.close({ timeout: 0 }));
      worker.on('error', (error) => codes.push((error as { code?: unknown }).code));
      worker.on('closed', (cause) => closed.push(cause));
      await inner.handle('restarts').publish({ id: 'before' });
      await until(() => done.includes('before'), { what: 'job before done', timeout: 10_000 });
      const stopping = first.app.close();
      // Shutting down, it answers CLOSED: the worker retries.
      await until(() => codes.includes('CLOSED'), { what: 'a CLOSED error', timeout: 10_000 });
      first.held.open();
      await stopping;
      // Down a while: its receives fail, and are retried.
      const down = codes.length;
      await until(() => codes.length > down, {
        what: 'a receive failing while down',
        timeout: 10_000,
      });
      await serve();
      await inner.handle('restarts').publish({ id: 'after' });
      await until(() => done.includes('after'), { what: 'job after done', timeout: 10_000 });
      expect(worker.state).toBe('running');
      expect(closed).toEqual([]);
    });
  }
});
