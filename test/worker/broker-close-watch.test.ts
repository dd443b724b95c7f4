import { afterEach, describe, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/index.js';
import { open } from '../../src/index.js';
import { Gate, Harness } from '../../src/testing/index.js';
import { jsonLogger, Worker, work } from '../../src/worker/index.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function harness(): Promise<Harness> {
  const h = await Harness.open({ queueOptions: { visibility: 60_000 } });
  cleanups.push(() => h.close());
  return h;
}

/** `queue` as it is, but with `watchClose` as given (undefined: as the queue has it). */
function withWatchClose(queue: Queue, watchClose: Queue['watchClose']): Queue {
  return new Proxy(queue, {
    get(target, property) {
      if (property === 'watchClose' && watchClose !== undefined) return watchClose;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Log lines at `error` and above, parsed. */
function logLines() {
  const lines: { msg: string }[] = [];
  const logger = jsonLogger({ level: 'error', write: (line) => lines.push(JSON.parse(line)) });
  return { lines, logger };
}

describe('a queue of ones own whose close watch fails', () => {
  it('a watchClose that throws fails the start and leaves no worker fetching', async () => {
    const h = await harness();
    const queue = withWatchClose(h.queue, () => {
      throw new Error('cannot watch');
    });
    const handled: string[] = [];
    const worker = new Worker(queue, async (job) => void handled.push(job.id), {
      clock: h.clock,
      wait: 1000,
    });
    cleanups.push(() => worker.close({ timeout: 0 }));
    await expect(worker.start()).rejects.toThrow('cannot watch');
    expect(worker.state).toBe('created');
    await h.queue.publish({ id: 'a' });
    await h.advance(5000, { step: 500 });
    // Nobody holds a worker that work() did not return: none may take jobs.
    expect(handled).toEqual([]);
    expect((await h.queue.stats()).ready).toBe(1);
    await expect(work(queue, async () => {}, { clock: h.clock })).rejects.toThrow('cannot watch');
    await h.advance(5000, { step: 500 });
    expect((await h.queue.stats()).ready).toBe(1);
  });

  it('a close watch whose removal throws does not keep the worker from closing', async () => {
    const h = await harness();
    const queue = withWatchClose(h.queue, (listener) => {
      h.queue.watchClose?.(listener);
      return () => {
        throw new Error('cannot stop watching');
      };
    });
    const worker = await work(queue, async () => {}, { clock: h.clock, wait: 1000 });
    const closed: unknown[] = [];
    worker.on('closed', (cause) => closed.push(cause));
    const closing = worker.close({ timeout: 0 });
    await h.advance(2000, { step: 250 });
    await expect(closing).resolves.toBeUndefined();
    expect(worker.state).toBe('closed');
    expect(closed).toEqual([undefined]);
  });
});

describe('a crashed process of leaseq/testing and the close of its broker', () => {
  it('a crashed process with every slot taken is told nothing: it neither logs nor closes', async () => {
    const h = await harness();
    const { lines, logger } = logLines();
    const gate = new Gate();
    const consumer = h.process((_job, ctx) => gate.pass(ctx.signal), { concurrency: 1, logger });
    await consumer.worker.start();
    await h.queue.publish({ id: 'a' });
    await h.flush();
    await gate.arrivedAt(1);
    consumer.crash();
    await h.broker.close();
    await h.advance(40_000, { step: 1000 });
    expect(consumer.worker.state).toBe('running');
    expect(lines).toEqual([]);
    expect(consumer.outcomes).toEqual([]);
  });

  it('a crashed process whose receive the close ended does not take the close for its own', async () => {
    const h = await harness();
    const { lines, logger } = logLines();
    const consumer = h.process(async () => {}, { concurrency: 1, wait: 20_000, logger });
    await consumer.worker.start();
    await h.flush();
    consumer.crash();
    expect(consumer.faults.closed).toBe(false);
    await h.broker.close();
    await h.advance(40_000, { step: 1000 });
    expect(lines.map((line) => line.msg)).not.toContain('worker closing: its broker was closed');
    expect(consumer.worker.state).not.toBe('closing');
    expect(consumer.worker.state).not.toBe('closed');
    expect(consumer.faults.closed).toBe(false);
  });
});

describe('close watches of many workers on one broker', () => {
  it('workers started and closed again and again, over queue and handle, leave no watch behind', async () => {
    const broker = await open('memory:');
    cleanups.push(() => broker.close());
    const watches = { added: 0, removed: 0, told: 0 };
    const counted = (queue: Queue) =>
      withWatchClose(queue, (listener) => {
        watches.added += 1;
        const stop =
          queue.watchClose?.((cause) => {
            watches.told += 1;
            listener(cause);
          }) ?? (() => {});
        return () => {
          watches.removed += 1;
          stop();
        };
      });
    const byQueue = counted(await broker.queue('jobs'));
    const byHandle = counted(broker.handle('jobs'));
    for (let i = 0; i < 1000; i++) {
      const worker = await work(i % 2 === 0 ? byQueue : byHandle, async () => {}, { wait: 50 });
      await worker.close({ timeout: 0 });
    }
    // A close racing the start: the start watches nothing.
    for (let i = 0; i < 200; i++) {
      const worker = new Worker(byQueue, async () => {});
      await Promise.all([worker.start(), worker.close({ timeout: 0 })]);
      expect(worker.state).toBe('closed');
    }
    // Made and never started: watches nothing, and stays as made.
    const idle = new Worker(byHandle, async () => {});
    expect(watches).toEqual({ added: 1000, removed: 1000, told: 0 });
    await broker.close();
    expect(watches.told).toBe(0);
    expect(idle.state).toBe('created');
  });
});

describe('a worker with a session when its broker is closed', () => {
  it('its jobs are lost when its session is: once its heartbeats went unanswered for the timeout', async () => {
    const h = await harness();
    const gate = new Gate();
    const signals: AbortSignal[] = [];
    const consumer = h.process(
      (_job, ctx) => {
        signals.push(ctx.signal);
        return gate.pass(ctx.signal);
      },
      { concurrency: 1, session: { timeout: 9000 } },
    );
    const closed: unknown[] = [];
    consumer.worker.on('closed', (cause) => closed.push((cause as { code?: unknown }).code));
    await consumer.worker.start();
    await h.queue.publish({ id: 'a' });
    await h.flush();
    await gate.arrivedAt(1);
    await h.broker.close();
    await h.advance(8000, { step: 500 });
    expect(consumer.worker.state).toBe('closing');
    expect(signals[0]?.aborted).toBe(false);
    await h.advance(2000, { step: 500 });
    expect(consumer.outcomes.map((record) => [record.outcome, record.reason])).toEqual([
      ['lease-lost', 'session-ended'],
    ]);
    expect((signals[0]?.reason as { code?: unknown } | undefined)?.code).toBe('LEASE_LOST');
    expect(consumer.worker.state).toBe('closed');
    expect(closed).toEqual(['CLOSED']);
  });
});
