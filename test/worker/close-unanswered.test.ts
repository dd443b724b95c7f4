import { expect, it } from 'vitest';
import type { Queue } from '../../src/broker/queue.js';
import { type Delivery, ManualClock, open } from '../../src/index.js';
import { silentLogger } from '../../src/testing/index.js';
import { type OutcomeRecord, Worker } from '../../src/worker/index.js';
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

it('a job received at most once, answered after close() resolved, does not run: it is lost', async () => {
  const clock = new ManualClock(0);
  const broker = await open('memory:', { clock });
  const real = await broker.queue('auto', { visibility: 30_000 });
  let answer: ((deliveries: Delivery[]) => void) | undefined;
  const queue: Queue = Object.assign(Object.create(real), {
    receive: () =>
      new Promise<Delivery[]>((resolve) => {
        answer = resolve;
      }),
  });
  const handled: string[] = [];
  const outcomes: OutcomeRecord[] = [];
  const worker = new Worker(
    queue,
    async (job) => {
      handled.push(job.id);
    },
    { clock, ack: 'auto', logger: silentLogger },
  );
  worker.on('outcome', (record) => outcomes.push(record));
  await worker.start();
  await turns();
  const closing = worker.close({ timeout: 0 });
  await turns();
  clock.advance(GIVE_BACK_WAIT_MS);
  await closing;
  await real.publish({ id: 'late' });
  answer?.(await real.receive({ ack: 'auto' }));
  await turns();
  expect(handled).toEqual([]);
  expect(outcomes).toMatchObject([{ id: 'late', outcome: 'lost' }]);
  await broker.close();
});
