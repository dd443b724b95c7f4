import { afterEach, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { silentLogger, work } from '../../src/worker/index.js';
import { until } from '../until.js';
import { memoryServer } from './remote-harness.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A memory broker behind a server, and a remote client of it over the stream. */
async function streamClient() {
  const { inner, url } = await memoryServer(cleanups);
  const client = new RemoteBroker(url, { transport: 'stream' });
  cleanups.push(() => client.close());
  return { inner, client };
}

it('a worker over the stream whose client is closed under it takes no job published as the close begins, and closes with CLOSED', async () => {
  const { inner, client } = await streamClient();
  const queue = await client.queue('closing', { visibility: 60_000 });
  const ran: string[] = [];
  const closed: unknown[] = [];
  const worker = await work(queue, async (job) => void ran.push(job.id), {
    wait: 1000,
    concurrency: 4,
    logger: silentLogger,
  });
  cleanups.push(() => worker.close({ timeout: 0 }));
  worker.on('closed', (cause) => closed.push((cause as { code?: unknown }).code));
  await new Promise((resolve) => setTimeout(resolve, 100));
  const jobs = inner.handle('closing');
  const closing = client.close();
  for (let i = 0; i < 5; i++) await jobs.publish({ id: `job-${i}` });
  await closing;
  await until(() => worker.state === 'closed', { what: 'the worker to close' });
  expect(closed).toEqual(['CLOSED']);
  // None went to a worker that could no longer settle it: all still ready, none leased.
  expect(ran).toEqual([]);
  expect(await jobs.stats()).toMatchObject({ ready: 5, active: 0 });
});

it('a worker over the stream waiting for work when its client is closed closes with CLOSED, as over HTTP', async () => {
  const { client } = await streamClient();
  const queue = await client.queue('idle', { visibility: 60_000 });
  const errors: unknown[] = [];
  const closed: unknown[] = [];
  const worker = await work(queue, async () => {}, { wait: 1000, logger: silentLogger });
  cleanups.push(() => worker.close({ timeout: 0 }));
  worker.on('error', (error) => errors.push((error as { code?: unknown }).code));
  worker.on('closed', (cause) => closed.push((cause as { code?: unknown }).code));
  await new Promise((resolve) => setTimeout(resolve, 100));
  await client.close();
  await until(() => worker.state === 'closed', { what: 'the worker to close' });
  expect(errors.every((code) => code === 'CLOSED')).toBe(true);
  expect(closed).toEqual(['CLOSED']);
});
