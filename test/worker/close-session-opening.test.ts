import { afterEach, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/queue.js';
import { RemoteBroker } from '../../src/client/index.js';
import { ManualClock, open } from '../../src/index.js';
import { silentLogger, Worker, work } from '../../src/worker/index.js';
import { until } from '../until.js';
import { memoryServer, unansweringProxy } from './remote-harness.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('a worker over the stream stops waiting for a session open its server never answers as it closes; a session opened late is closed and runs nothing', {
  timeout: 20_000,
}, async () => {
  const server = await memoryServer(cleanups);
  const jobs = await server.inner.queue('jobs', { visibility: 60_000 });
  const link = await unansweringProxy(server.url, cleanups);
  // Far longer than the test: a close that waited for the open would not end within it.
  const client = new RemoteBroker(link.url, { transport: 'stream', timeoutMs: 60_000 });
  cleanups.push(() => client.close({ signal: AbortSignal.abort() }));
  const remote = client.handle('jobs');
  let opens = 0;
  let openPending = false;
  const opened: string[] = [];
  const queue: Queue = Object.assign(Object.create(remote), {
    openSession: (...args: Parameters<Queue['openSession']>) => {
      opens += 1;
      openPending = true;
      return remote
        .openSession(...args)
        .then((id) => {
          opened.push(id);
          return id;
        })
        .finally(() => {
          openPending = false;
        });
    },
  });
  const ran: string[] = [];
  const worker = await work(queue, async (job) => void ran.push(job.id), {
    session: { timeout: 10_000 },
    wait: 5000,
    logger: silentLogger,
  });
  cleanups.push(() => worker.close({ timeout: 0 }));
  const sessions = async () => (await jobs.stats()).sessions;
  await until(async () => opened.length === 1 && (await sessions()) === 1, {
    what: 'the first session to open',
  });
  // The connection drops, and the server is then out of reach: connections are accepted,
  // never answered. The server ends the first session with its connection.
  link.cut();
  link.drop();
  await until(() => opens === 2 && openPending && link.unanswered() > 0, {
    what: 'the worker to open its session again over a connection that gets no answer',
  });
  await until(async () => (await sessions()) === 0, {
    what: 'the server to end the first session with its connection',
  });
  await worker.close();
  expect(worker.state).toBe('closed');
  // Closed while the open still waits for its connection (it may go on: it is not cut).
  expect(openPending).toBe(true);
  // The server comes back: the open is answered, late. The session it opened holds nothing,
  // is closed at once, and no job is received under it.
  await jobs.publish({ id: 'late' });
  link.release();
  await until(() => !openPending, { what: 'the open to be answered' });
  expect(opens).toBe(2);
  expect(opened).toHaveLength(2);
  await until(async () => (await sessions()) === 0, { what: 'the late session to be closed' });
  expect(ran).toEqual([]);
  expect(await jobs.stats()).toMatchObject({ ready: 1, active: 0 });
  expect((await jobs.job('late'))?.deliveryCount).toBe(0);
});

it('a worker over an in-process queue whose session open never answers closes without waiting for it; a session opened late is closed', async () => {
  // A manual clock that never moves: a close that waited out any grace period would not end.
  const clock = new ManualClock(0);
  const broker = await open('memory:', { clock });
  cleanups.push(() => broker.close());
  const real = await broker.queue('jobs', { visibility: 60_000 });
  let answer: (() => void) | undefined;
  let opened: string | undefined;
  // A storage behind a partition: the open gets no answer until `answer`.
  const queue: Queue = Object.assign(Object.create(real), {
    openSession: (...args: Parameters<Queue['openSession']>) =>
      new Promise<string>((resolve, reject) => {
        answer = () =>
          real.openSession(...args).then((id) => {
            opened = id;
            resolve(id);
          }, reject);
      }),
  });
  const ran: string[] = [];
  const worker = new Worker(queue, async (job) => void ran.push(job.id), {
    clock,
    session: { timeout: 10_000 },
    logger: silentLogger,
  });
  await worker.start();
  await until(() => answer !== undefined, { what: 'the worker to open its session' });
  let closed = false;
  const closing = worker.close().then(() => {
    closed = true;
  });
  await until(() => closed, { what: 'the worker to close' });
  await closing;
  await real.publish({ id: 'late' });
  answer?.();
  await until(() => opened !== undefined, { what: 'the open to be answered' });
  await until(async () => (await real.stats()).sessions === 0, {
    what: 'the late session to be closed',
  });
  expect(ran).toEqual([]);
  expect(await real.stats()).toMatchObject({ ready: 1, active: 0 });
});
