import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { leaseAge } from '../../src/broker/lease-age.js';
import { RemoteBroker } from '../../src/client/index.js';
import {
  type Delivery,
  EngineBroker,
  ManualClock,
  MemoryEngine,
  openEngine,
  type QueueHandle,
} from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { type OutcomeRecord, Worker } from '../../src/worker/index.js';

/**
 * A memory engine whose reservations answer `lateMs` after they were made (the clock moves on
 * before the answer), as a storage behind a stalled connection answers once it heals.
 */
function lateEngine(clock: ManualClock) {
  const engine = new MemoryEngine();
  // `once`: only the next reservation is late.
  const state = { lateMs: 0, once: false };
  const late = async <T>(answer: Promise<T>): Promise<T> => {
    const value = await answer;
    clock.advance(state.lateMs);
    if (state.once) state.lateMs = 0;
    return value;
  };
  const wrap = (handle: QueueHandle): QueueHandle =>
    Object.assign(Object.create(handle), {
      reserve: (...args: Parameters<QueueHandle['reserve']>) => late(handle.reserve(...args)),
      run: (...args: Parameters<QueueHandle['run']>) =>
        args[1].type === 'reserve' ? late(handle.run(...args)) : handle.run(...args),
    });
  // engine.queue hands out engine.handle's handle: wrapping that one wraps both.
  const handle = engine.handle.bind(engine);
  Object.assign(engine, {
    handle: (...args: Parameters<MemoryEngine['handle']>) => wrap(handle(...args)),
  });
  return { engine, state };
}

describe('a reservation answered late', () => {
  it('is noted with the age of its lease, and a worker does not run a job whose lease ended before the answer', async () => {
    const clock = new ManualClock(1_000);
    const { engine, state } = lateEngine(clock);
    const broker = new EngineBroker(engine, { clock });
    const queue = await broker.queue('jobs', { visibility: 1_000 });
    await queue.publish({ id: 'probe' });
    state.lateMs = 400;
    const [probe] = (await queue.receive()) as [Delivery];
    expect(leaseAge(probe)).toBe(400);
    expect(await queue.ack(probe.token)).toBe(true);

    await queue.publish({ id: 'a' });
    const handled: number[] = [];
    const outcomes: OutcomeRecord[] = [];
    const worker = new Worker(
      queue,
      async (_job, ctx) => {
        handled.push(ctx.token);
      },
      { clock, concurrency: 1, visibility: 1_000 },
    );
    worker.on('outcome', (record) => outcomes.push(record));
    // Its lease of 1000 ms ended 500 ms before the answer came: another consumer may have it.
    state.lateMs = 1_500;
    expect(await worker.runOnce()).toBe(0);
    expect(handled).toEqual([]);
    expect(outcomes).toMatchObject([{ id: 'a', outcome: 'lease-lost', reason: 'expired' }]);
    // Answered in time, the job's next delivery runs.
    state.lateMs = 0;
    expect(await worker.runOnce()).toBe(1);
    await worker.close();
    expect(handled).toEqual([3]);
    await broker.close();
  });
});

describe('a reservation handed over to a parked receive and answered late', () => {
  it('is noted with the age of its lease since the publish that reserved it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-late-'));
    const clock = new ManualClock(1_000);
    const engine = await openEngine(`sqlite:${join(dir, 'q.db')}`, { clockMode: 'follow' });
    const state = { lateMs: 0 };
    // The handed-over deliveries come `lateMs` after the publish reserved them.
    const handle = engine.handle.bind(engine);
    Object.assign(engine, {
      handle: (...args: Parameters<typeof engine.handle>) => {
        const real = handle(...args);
        const reserveOnReady = real.reserveOnReady?.bind(real);
        if (reserveOnReady === undefined) throw new Error('SQLite reserves on ready');
        return Object.assign(Object.create(real), {
          reserveOnReady: (...call: Parameters<typeof reserveOnReady>) => {
            const waiting = reserveOnReady(...call);
            return {
              ...waiting,
              deliveries: waiting.deliveries.then((deliveries) => {
                clock.advance(state.lateMs);
                return deliveries;
              }),
            };
          },
        });
      },
    });
    const broker = new EngineBroker(engine, { clock });
    try {
      const queue = await broker.queue('jobs');
      state.lateMs = 700;
      const receiving = queue.receive({ wait: 10_000, visibility: 1_000 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      clock.advance(100);
      await queue.publish({ id: 'a' });
      const [delivery] = (await receiving) as [Delivery];
      expect(delivery.id).toBe('a');
      // Reserved by the publish at 1100, answered at 1800: 700 ms of its lease gone.
      expect(delivery.deadline).toBe(2_100);
      expect(leaseAge(delivery)).toBe(700);
    } finally {
      await broker.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.each(['http', 'stream'] as const)(
  'a reservation the server answered late, over %s',
  (transport) => {
    it('carries the age of its lease to the client, whose worker does not run a job whose lease ended', async () => {
      const clock = new ManualClock(1_000);
      const { engine, state } = lateEngine(clock);
      const broker = new EngineBroker(engine, { clock });
      const app = await createApp({
        broker,
        receiptSecret: 'late-answers-secret-of-32-characters',
      });
      const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
      const client = new RemoteBroker(baseUrl, { transport });
      try {
        const queue = await client.queue('jobs', { visibility: 1_000 });
        await queue.publish({ id: 'probe' });
        state.lateMs = 400;
        const [probe] = (await queue.receive({ wait: 1_000 })) as [Delivery];
        expect(probe.id).toBe('probe');
        // The server's 400 ms, and at most what the answer took to come.
        expect(leaseAge(probe)).toBeGreaterThanOrEqual(400);
        expect(leaseAge(probe)).toBeLessThan(1_000);
        expect(await queue.ack(probe.token)).toBe(true);

        await queue.publish({ id: 'a' });
        const handled: Delivery['token'][] = [];
        const outcomes: OutcomeRecord[] = [];
        const worker = new Worker(
          queue,
          async (_job, ctx) => {
            handled.push(ctx.token);
          },
          { concurrency: 1, visibility: 1_000 },
        );
        worker.on('outcome', (record) => outcomes.push(record));
        // Its lease of 1000 ms ended 500 ms before the server answered; the next is in time.
        state.lateMs = 1_500;
        state.once = true;
        if (transport === 'http') {
          expect(await worker.runOnce({ wait: 1_000 })).toBe(0);
          expect(outcomes).toMatchObject([{ id: 'a', outcome: 'lease-lost', reason: 'expired' }]);
          expect(await worker.runOnce({ wait: 1_000 })).toBe(1);
        } else {
          // Pushed with its deadline past the server's time of the push, the delivery is handed
          // to no receive: the receive takes the job's next delivery.
          expect(await worker.runOnce({ wait: 1_000 })).toBe(1);
        }
        await worker.close();
        expect(handled).toEqual([3]);
        expect(outcomes.map((record) => record.outcome)).toEqual(
          transport === 'http' ? ['lease-lost', 'acked'] : ['acked'],
        );
      } finally {
        await client.close();
        await app.close();
        await broker.close();
      }
    });
  },
);
