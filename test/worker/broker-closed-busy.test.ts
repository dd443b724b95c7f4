import { afterEach, describe, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/index.js';
import { StorageUnavailableError } from '../../src/core/index.js';
import { Gate, type Harness } from '../../src/testing/index.js';
import { fetchRetryJitter } from '../../src/worker/fetch-retry.js';
import {
  type JobContext,
  jsonLogger,
  type OutcomeRecord,
  type Worker,
  type WorkerErrorSource,
  work,
} from '../../src/worker/index.js';
import { describeEngines, harnessFor, type WorkerEngine, workerEngines } from './engines.js';

const engines = await workerEngines();

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  fetchRetryJitter.random = Math.random;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** What a worker told its listeners and its logger. */
interface Seen {
  errors: { during: WorkerErrorSource; code: unknown }[];
  outcomes: OutcomeRecord[];
  closed: unknown[];
  lines: { msg: string; code?: string }[];
}

/**
 * A worker of concurrency 2 over `queue` (default the harness's) on the harness's clock, with
 * all it says kept; `whenClosed` resolves at its closed event.
 */
async function watchedWorker(
  h: Harness,
  handler: (job: unknown, ctx: JobContext) => Promise<void>,
  options: { queue?: Queue; visibility?: number; renew?: 'never' } = {},
): Promise<{ worker: Worker; seen: Seen; whenClosed: Promise<unknown> }> {
  const seen: Seen = { errors: [], outcomes: [], closed: [], lines: [] };
  const worker = await work(options.queue ?? h.queue, handler, {
    clock: h.clock,
    concurrency: 2,
    ...(options.visibility === undefined ? {} : { visibility: options.visibility }),
    ...(options.renew === undefined ? {} : { renew: options.renew }),
    logger: jsonLogger({ level: 'error', write: (line) => seen.lines.push(JSON.parse(line)) }),
  });
  cleanups.push(() => worker.close({ timeout: 0 }));
  worker.on('error', (error, during) =>
    seen.errors.push({ during, code: (error as { code?: unknown }).code }),
  );
  worker.on('outcome', (record) => seen.outcomes.push(record));
  const whenClosed = new Promise<unknown>((resolve) => {
    worker.on('closed', (cause) => {
      seen.closed.push(cause);
      resolve(cause);
    });
  });
  return { worker, seen, whenClosed };
}

/** Two jobs published and both handlers running: every slot of the worker is taken. */
async function busy(h: Harness, gate: Gate): Promise<void> {
  await h.queue.publish({ id: 'a' });
  await h.queue.publish({ id: 'b' });
  await h.flush();
  await gate.arrivedAt(2);
  await h.flush();
}

const codeOf = (value: unknown) => (value as { code?: unknown } | undefined)?.code;

describeEngines(engines, 'a worker with every slot taken when its broker is closed', (open) => {
  const harness = () => open({ queueOptions: { visibility: 60_000, maxDeliveries: 3 } });

  it('begins closing at once: its handlers get the grace period, then their signals fire and it closes once', async () => {
    const h = await harness();
    const gate = new Gate();
    const signals: AbortSignal[] = [];
    const { worker, seen, whenClosed } = await watchedWorker(h, (_job, ctx) => {
      signals.push(ctx.signal);
      return gate.pass(ctx.signal);
    });
    await busy(h, gate);
    expect(worker.metrics().inHand).toBe(2);
    await h.broker.close();
    await h.flush();
    // Told by the close itself: no receive failed, none was needed.
    expect(worker.state).toBe('closing');
    expect(seen.lines.map((line) => [line.msg, line.code])).toEqual([
      ['worker closing: its broker was closed', 'CLOSED'],
    ]);
    expect(seen.errors).toEqual([]);
    expect(worker.metrics().fetchErrors).toBe(0);
    // The grace period of a close (30 s), counted from the broker's close.
    await h.advance(29_000, { step: 1000 });
    expect(worker.state).toBe('closing');
    expect(signals.map((signal) => signal.aborted)).toEqual([false, false]);
    expect(seen.outcomes).toEqual([]);
    await h.advance(1000);
    expect(signals.map((signal) => codeOf(signal.reason))).toEqual([
      'WORKER_CLOSING',
      'WORKER_CLOSING',
    ]);
    await h.advance(1000, { step: 250 });
    expect(codeOf(await whenClosed)).toBe('CLOSED');
    expect(worker.state).toBe('closed');
    expect(seen.closed).toHaveLength(1);
    // Their release cannot land: each is left to its lease, and says so.
    expect(seen.outcomes).toHaveLength(2);
    for (const record of seen.outcomes) {
      expect(record).toMatchObject({ outcome: 'lease-lost', reason: 'settle-failed' });
      expect(record.error).toMatch(/^released not settled: /);
    }
    expect(worker.metrics().fetchErrors).toBe(0);
    await h.advance(60_000, { step: 10_000 });
    expect(seen.closed).toHaveLength(1);
  });

  it('a handler that ends within the grace period has its ack fail, and no receive follows', async () => {
    const h = await harness();
    const gate = new Gate();
    const { worker, seen, whenClosed } = await watchedWorker(h, () => gate.pass());
    await busy(h, gate);
    await h.broker.close();
    await h.flush();
    expect(worker.state).toBe('closing');
    await h.advance(5000, { step: 1000 });
    gate.open();
    expect(codeOf(await whenClosed)).toBe('CLOSED');
    expect(h.clock.now()).toBeLessThan(30_000);
    expect(seen.outcomes.map((record) => [record.id, record.outcome, record.reason])).toEqual([
      ['a', 'lease-lost', 'settle-failed'],
      ['b', 'lease-lost', 'settle-failed'],
    ]);
    expect(seen.outcomes[0]?.error).toMatch(/^acked not settled: /);
    expect(seen.errors.map((error) => error.during)).toEqual(['settle', 'settle']);
    expect(worker.metrics().fetchErrors).toBe(0);
  });

  it('a lease that ends within the grace period is lost as it ends, and the worker closes then', async () => {
    const h = await harness();
    const gate = new Gate();
    const signals: AbortSignal[] = [];
    const { worker, seen, whenClosed } = await watchedWorker(
      h,
      (_job, ctx) => {
        signals.push(ctx.signal);
        return gate.pass(ctx.signal);
      },
      { visibility: 10_000, renew: 'never' },
    );
    await busy(h, gate);
    await h.broker.close();
    await h.flush();
    expect(worker.state).toBe('closing');
    await h.advance(9000, { step: 1000 });
    expect(signals.map((signal) => signal.aborted)).toEqual([false, false]);
    await h.advance(1000);
    expect(codeOf(await whenClosed)).toBe('CLOSED');
    expect(signals.map((signal) => codeOf(signal.reason))).toEqual(['LEASE_LOST', 'LEASE_LOST']);
    expect(seen.outcomes.map((record) => [record.outcome, record.reason])).toEqual([
      ['lease-lost', 'expired'],
      ['lease-lost', 'expired'],
    ]);
    expect(seen.closed).toHaveLength(1);
  });
});

describeEngines(engines, 'a close of the worker racing the close of its broker', (open) => {
  const harness = () => open({ queueOptions: { visibility: 60_000, maxDeliveries: 3 } });

  it('a broker closed during the grace period of close() leaves that close as asked, with no cause', async () => {
    const h = await harness();
    const gate = new Gate();
    const signals: AbortSignal[] = [];
    const { worker, seen } = await watchedWorker(h, (_job, ctx) => {
      signals.push(ctx.signal);
      return gate.pass(ctx.signal);
    });
    await busy(h, gate);
    const closing = worker.close({ timeout: 5000 });
    await h.advance(1000);
    await h.broker.close();
    await h.advance(3000, { step: 1000 });
    expect(worker.state).toBe('closing');
    expect(signals.map((signal) => signal.aborted)).toEqual([false, false]);
    await h.advance(2000, { step: 250 });
    await closing;
    expect(worker.state).toBe('closed');
    expect(seen.closed).toEqual([undefined]);
    expect(seen.lines.map((line) => line.msg)).not.toContain(
      'worker closing: its broker was closed',
    );
    expect(seen.outcomes.map((record) => [record.outcome, record.reason])).toEqual([
      ['lease-lost', 'settle-failed'],
      ['lease-lost', 'settle-failed'],
    ]);
  });

  for (const first of ['broker', 'worker'] as const) {
    it(`the ${first} closed first, both in one turn: both resolve, one closed event`, async () => {
      const h = await harness();
      const gate = new Gate();
      const { worker, seen } = await watchedWorker(h, (_job, ctx) => gate.pass(ctx.signal));
      await busy(h, gate);
      const closes =
        first === 'broker'
          ? [h.broker.close(), worker.close({ timeout: 0 })]
          : [worker.close({ timeout: 0 }), h.broker.close()];
      const settled = Promise.allSettled(closes);
      await h.advance(2000, { step: 250 });
      expect((await settled).map((result) => result.status)).toEqual(['fulfilled', 'fulfilled']);
      expect(worker.state).toBe('closed');
      expect(seen.closed).toHaveLength(1);
      expect(codeOf(seen.closed[0])).toBe(first === 'broker' ? 'CLOSED' : undefined);
      expect(seen.outcomes).toHaveLength(2);
      await h.advance(60_000, { step: 10_000 });
      expect(seen.closed).toHaveLength(1);
    });
  }
});

/** `queue` as it is, but counting its close watchers, and with receives failing while `failing.on`. */
function watched(queue: Queue, failing = { on: false }) {
  const watchers = { added: 0, removed: 0 };
  const proxy = new Proxy(queue, {
    get(target, property) {
      if (property === 'watchClose') {
        return (listener: (cause: Error) => void) => {
          watchers.added += 1;
          const stop = target.watchClose?.(listener) ?? (() => {});
          return () => {
            watchers.removed += 1;
            stop();
          };
        };
      }
      if (property === 'receive' && failing.on) {
        return () => Promise.reject(new StorageUnavailableError('the storage is out of reach'));
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { queue: proxy, watchers };
}

describe('a worker over memory and its broker close', () => {
  const open = harnessFor(engines.find((engine) => engine.name === 'memory') as WorkerEngine);

  it('a worker closed before its broker stops listening for that close, which then tells it nothing', async () => {
    const h = await open();
    const { queue, watchers } = watched(h.queue);
    const { worker, seen } = await watchedWorker(h, async () => {}, { queue });
    expect(watchers).toEqual({ added: 1, removed: 0 });
    await worker.close();
    expect(watchers).toEqual({ added: 1, removed: 1 });
    await h.broker.close();
    await h.flush();
    expect(seen.closed).toEqual([undefined]);
    expect(seen.lines).toEqual([]);
  });

  it('a worker waiting to retry a failed receive closes at once when its broker is closed', async () => {
    fetchRetryJitter.random = () => 0.5;
    const h = await open();
    const failing = { on: true };
    const { queue } = watched(h.queue, failing);
    const { worker, seen, whenClosed } = await watchedWorker(h, async () => {}, { queue });
    // Retries back off to 30 s steps (22.5 s waits at this jitter).
    await h.advance(120_000, { step: 500 });
    const failures = worker.metrics().fetchErrors;
    expect(failures).toBeGreaterThanOrEqual(8);
    failing.on = false;
    await h.broker.close();
    await h.flush();
    expect(worker.state).toBe('closed');
    expect(codeOf(await whenClosed)).toBe('CLOSED');
    expect(worker.metrics().fetchErrors).toBe(failures);
    expect(seen.lines.at(-1)).toMatchObject({
      msg: 'worker closing: its broker was closed',
      code: 'CLOSED',
    });
  });
});
