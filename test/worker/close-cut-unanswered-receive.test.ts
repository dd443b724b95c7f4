import { expect, it } from 'vitest';
import type { Queue } from '../../src/broker/queue.js';
import { type Delivery, ManualClock, open } from '../../src/index.js';
import { silentLogger } from '../../src/testing/index.js';
import { type OutcomeRecord, Worker } from '../../src/worker/index.js';
import { GIVE_BACK_WAIT_MS } from '../../src/worker/worker.js';

const turns = async (count = 5) => {
  for (let turn = 0; turn < count; turn++) await new Promise((resolve) => setImmediate(resolve));
};

it('a second, shorter close cuts the wait for a receive the storage never answers: the job in hand is released and close ends within the give-back second', async () => {
  const clock = new ManualClock(0);
  const broker = await open('memory:', { clock });
  const real = await broker.queue('jobs', { visibility: 60_000 });
  await real.publish({ id: 'a' });
  let receives = 0;
  // The first receive is answered; the next gets no answer (a storage behind a partition).
  const queue: Queue = Object.assign(Object.create(real), {
    receive: (options: Parameters<Queue['receive']>[0]) => {
      receives += 1;
      return receives === 1 ? real.receive(options) : new Promise<Delivery[]>(() => {});
    },
  });
  const outcomes: OutcomeRecord[] = [];
  const worker = new Worker(
    queue,
    (_job, ctx) =>
      new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve())),
    { clock, logger: silentLogger, concurrency: 2 },
  );
  worker.on('outcome', (record) => outcomes.push(record));
  await worker.start();
  await turns();
  expect(receives).toBe(2);
  let closed = false;
  const first = worker.close({ timeout: 20_000 }).then(() => {
    closed = true;
  });
  await turns();
  // A second signal: closeOnSignals closes again with timeout 0.
  const second = worker.close({ timeout: 0 });
  await turns();
  for (let step = 0; step < GIVE_BACK_WAIT_MS / 100 && !closed; step++) {
    clock.advance(100);
    await turns();
  }
  expect(closed).toBe(true);
  expect(clock.now()).toBeLessThanOrEqual(GIVE_BACK_WAIT_MS);
  await Promise.all([first, second]);
  expect(outcomes).toMatchObject([{ id: 'a', outcome: 'released', reason: 'shutdown' }]);
  expect((await real.inspect()).ready).toEqual(['a']);
  await broker.close();
});
