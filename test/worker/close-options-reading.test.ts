import { afterEach, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/queue.js';
import { RemoteBroker } from '../../src/client/index.js';
import { ManualClock, open } from '../../src/index.js';
import { silentLogger, Worker, work } from '../../src/worker/index.js';
import { GIVE_BACK_WAIT_MS, VISIBILITY_READ_EVERY_MS } from '../../src/worker/worker.js';
import { until } from '../until.js';
import { memoryServer, unansweringProxy } from './remote-harness.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('a worker over the stream stops waiting for a read of its queue options that its server never answers as it closes', {
  timeout: 20_000,
}, async () => {
  const server = await memoryServer(cleanups);
  const jobs = await server.inner.queue('jobs', { visibility: 60_000 });
  const link = await unansweringProxy(server.url, cleanups);
  // Far longer than the test: a close that waited for the read would not end within it.
  const client = new RemoteBroker(link.url, { transport: 'stream', timeoutMs: 60_000 });
  cleanups.push(() => client.close({ signal: AbortSignal.abort() }));
  const remote = client.handle('jobs');
  let reads = 0;
  let readPending = false;
  let readFailed = false;
  let receives = 0;
  /** Holds the answer of the next receive until it resolves: the test acts between fetches. */
  let hold: Promise<void> | undefined;
  let holding = false;
  const queue: Queue = Object.assign(Object.create(remote), {
    options: () => {
      reads += 1;
      readPending = true;
      return remote
        .options()
        .catch((error: unknown) => {
          readFailed = true;
          throw error;
        })
        .finally(() => {
          readPending = false;
        });
    },
    receive: async (...args: Parameters<Queue['receive']>) => {
      receives += 1;
      const deliveries = await remote.receive(...args);
      const held = hold;
      if (held !== undefined) {
        hold = undefined;
        holding = true;
        await held;
      }
      return deliveries;
    },
  });
  // The worker times on a clock of its own, which the test moves: its next fetch reads the
  // queue options again.
  const clock = new ManualClock(0);
  const ran: string[] = [];
  let resume = () => {};
  hold = new Promise<void>((resolve) => {
    resume = resolve;
  });
  const worker = await work(queue, async (job) => void ran.push(job.id), {
    clock,
    wait: 100,
    logger: silentLogger,
  });
  cleanups.push(async () => {
    resume();
    const closing = worker.close({ timeout: 0 });
    // A close still waiting on the worker's clock for what got no answer ends.
    clock.advance(2 * GIVE_BACK_WAIT_MS);
    await closing;
  });
  await until(() => holding, { what: 'a receive to answer' });
  expect(reads).toBe(1);
  // The server goes out of reach: connections are accepted, never answered. The read is due.
  link.cut();
  clock.advance(VISIBILITY_READ_EVERY_MS);
  resume();
  await until(() => reads === 2 && readPending && link.unanswered() > 0, {
    what: 'the worker to read its queue options over a connection that gets no answer',
  });
  let closed = false;
  const closing = worker.close().then(() => {
    closed = true;
  });
  await until(() => closed, { what: 'the worker to close', timeout: 10_000 });
  await closing;
  expect(worker.state).toBe('closed');
  // Closed while the read still waits for its answer (it goes on: it is not cut).
  expect(readPending).toBe(true);
  const receivesAtClose = receives;
  // The server comes back: the read is answered, late, and nothing is received.
  await jobs.publish({ id: 'late' });
  link.release();
  await until(() => !readPending, { what: 'the read to be answered' });
  expect(readFailed).toBe(false);
  expect(receives).toBe(receivesAtClose);
  expect(ran).toEqual([]);
  // The stream's subscription, ended as the worker closed, may still be pushed the job as the
  // server comes back: it is given back unworked.
  await until(
    async () => {
      const { ready, active } = await jobs.stats();
      return ready === 1 && active === 0;
    },
    { what: 'the job to be ready' },
  );
  expect((await jobs.job('late'))?.deliveryCount).toBe(0);
});

/**
 * A memory queue on `clock` whose reads of its options after the first `answered` get no
 * answer (a storage behind a partition) until `answer()`.
 */
async function unansweredOptions(clock: ManualClock, answered: number) {
  const broker = await open('memory:', { clock });
  cleanups.push(() => broker.close());
  const real = await broker.queue('jobs', { visibility: 60_000 });
  const waiting: ((fail: boolean) => void)[] = [];
  const state = {
    reads: 0,
    pending: 0,
    /** Answers the reads waiting, or fails them (the storage is back, or gave up). */
    answer(fail = false) {
      for (const go of waiting.splice(0)) go(fail);
    },
  };
  const queue: Queue = Object.assign(Object.create(real), {
    options: () => {
      state.reads += 1;
      if (state.reads <= answered) return real.options();
      state.pending += 1;
      return new Promise((resolve, reject) => {
        waiting.push((fail) => {
          state.pending -= 1;
          if (fail) reject(new Error('connection reset'));
          else real.options().then(resolve, reject);
        });
      });
    },
  });
  return { real, queue, state };
}

it('a worker over an in-process queue closes without waiting for a read of its queue options that gets no answer, and does not report its late failure', async () => {
  // A manual clock that moves only when the test moves it: a close that waited out any grace
  // period would not end.
  const clock = new ManualClock(0);
  const { real, queue, state } = await unansweredOptions(clock, 1);
  const ran: string[] = [];
  const errors: unknown[] = [];
  const worker = new Worker(queue, async (job) => void ran.push(job.id), {
    clock,
    wait: 1000,
    logger: silentLogger,
  });
  worker.on('error', (error) => void errors.push(error));
  await worker.start();
  cleanups.push(async () => {
    const closing = worker.close({ timeout: 0 });
    clock.advance(2 * GIVE_BACK_WAIT_MS);
    await closing;
  });
  await until(() => clock.waiting > 0, { what: 'the worker to wait for work' });
  // The receive waiting ends empty; the next fetch reads the queue options again.
  clock.advance(VISIBILITY_READ_EVERY_MS);
  await until(() => state.pending === 1, { what: 'the worker to read its queue options' });
  let closed = false;
  const closing = worker.close().then(() => {
    closed = true;
  });
  await until(() => closed, { what: 'the worker to close' });
  await closing;
  await real.publish({ id: 'late' });
  // The read fails, late: the worker no longer waits for it, and does not report it.
  state.answer(true);
  await until(() => state.pending === 0, { what: 'the read to fail' });
  await new Promise((resolve) => setImmediate(resolve));
  expect(ran).toEqual([]);
  expect(errors).toEqual([]);
  expect(await real.stats()).toMatchObject({ ready: 1, active: 0 });
});

it('a close does not wait for the first read of the queue options by a runOnce that gets no answer', async () => {
  const clock = new ManualClock(0);
  const { real, queue, state } = await unansweredOptions(clock, 0);
  const ran: string[] = [];
  const worker = new Worker(queue, async (job) => void ran.push(job.id), {
    clock,
    logger: silentLogger,
  });
  await real.publish({ id: 'a' });
  const step = worker.runOnce();
  await until(() => state.pending === 1, { what: 'the step to read the queue options' });
  let closed = false;
  const closing = worker.close().then(() => {
    closed = true;
  });
  cleanups.push(async () => {
    const cut = worker.close({ timeout: 0 });
    clock.advance(2 * GIVE_BACK_WAIT_MS);
    await cut;
  });
  await until(() => closed, { what: 'the worker to close' });
  await closing;
  expect(await step).toBe(0);
  state.answer();
  await until(() => state.pending === 0, { what: 'the read to be answered' });
  expect(ran).toEqual([]);
  expect(await real.stats()).toMatchObject({ ready: 1, active: 0 });
});
