import { expect, it } from 'vitest';
import type { Queue } from '../../src/broker/queue.js';
import { type Delivery, ManualClock, open } from '../../src/index.js';
import { silentLogger } from '../../src/testing/index.js';
import { Worker } from '../../src/worker/index.js';
import { GIVE_BACK_WAIT_MS } from '../../src/worker/worker.js';

const turns = async (count = 5) => {
  for (let turn = 0; turn < count; turn++) await new Promise((resolve) => setImmediate(resolve));
};

it('close() is not held past its timeout and the give-back second by a receive the storage never answers; what it answers later goes back unrun', async () => {
  const clock = new ManualClock(0);
  const broker = await open('memory:', { clock });
  const real = await broker.queue('jobs', { visibility: 30_000 });
  let answer: ((deliveries: Delivery[]) => void) | undefined;
  // A storage behind a partition: the receive gets no answer, and its signal cannot end it.
  const queue: Queue = Object.assign(Object.create(real), {
    receive: () =>
      new Promise<Delivery[]>((resolve) => {
        answer = resolve;
      }),
  });
  const worker = new Worker(queue, async () => {}, { clock, logger: silentLogger });
  await worker.start();
  await turns();
  expect(answer).toBeDefined();
  let closed = false;
  const closing = worker.close({ timeout: 1000 }).then(() => {
    closed = true;
  });
  await turns();
  clock.advance(1000);
  await turns();
  expect(closed).toBe(false);
  clock.advance(GIVE_BACK_WAIT_MS);
  await closing;
  expect(worker.state).toBe('closed');
  // The answer comes after all: its job was never run, and goes back at once.
  await real.publish({ id: 'late' });
  answer?.(await real.receive());
  await turns();
  expect((await real.inspect()).ready).toEqual(['late']);
  expect((await real.job('late'))?.deliveryCount).toBe(0);
  await broker.close();
});
