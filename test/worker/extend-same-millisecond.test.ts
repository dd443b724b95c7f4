import { expect, it } from 'vitest';
import type { Clock } from '../../src/broker/clock.js';
import { ManualClock, open } from '../../src/index.js';
import { Gate, silentLogger } from '../../src/testing/index.js';
import { type OutcomeRecord, Worker } from '../../src/worker/index.js';

const turns = async (count = 5) => {
  for (let turn = 0; turn < count; turn++) await new Promise((resolve) => setImmediate(resolve));
};

it('two ctx.extend() answered in one millisecond of the queue, the worker clock a millisecond on, are no maxLease cap: the lease is still renewed', async () => {
  // The queue's clock and the worker's count whole milliseconds, each read at its own instant:
  // by the time the handler extends, the worker's reads one more than the queue's.
  const clock = new ManualClock(0);
  let ahead = 0;
  const workerClock: Clock = {
    now: () => clock.now() + ahead,
    sleep: (ms, signal) => clock.sleep(ms, signal),
  };
  const broker = await open('memory:', { clock });
  const queue = await broker.queue('jobs', { visibility: 1000 });
  await queue.publish({ id: 'a' });
  const start = new Gate();
  const finish = new Gate();
  const deadlines: number[] = [];
  let signal: AbortSignal | undefined;
  const worker = new Worker(
    queue,
    async (_job, ctx) => {
      signal = ctx.signal;
      await start.pass();
      deadlines.push(await ctx.extend());
      deadlines.push(await ctx.extend());
      await finish.pass(ctx.signal);
    },
    { clock: workerClock, logger: silentLogger },
  );
  const outcomes: OutcomeRecord[] = [];
  worker.on('outcome', (record) => outcomes.push(record));
  expect(await worker.runOnce()).toBe(1);
  ahead = 1;
  start.open();
  await turns();
  // Both answered at the queue's 0: the deadline the reservation gave, as R10 computes it.
  expect(deadlines).toEqual([1000, 1000]);
  for (let step = 0; step < 30; step++) {
    clock.advance(100);
    await turns();
  }
  expect(signal?.aborted).toBe(false);
  expect(outcomes).toEqual([]);
  expect(worker.metrics().renewals).toBeGreaterThan(2);
  const [live] = await queue.deliveries();
  expect(live?.deadline).toBeGreaterThan(clock.now());
  finish.open();
  await turns();
  expect(outcomes).toMatchObject([{ id: 'a', outcome: 'acked' }]);
  await worker.close({ timeout: 0 });
  await broker.close();
});
