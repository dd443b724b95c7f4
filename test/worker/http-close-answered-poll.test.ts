import { afterEach, expect, it } from 'vitest';
import type { RemoteBroker } from '../../src/client/index.js';
import { open } from '../../src/index.js';
import { silentLogger } from '../../src/testing/index.js';
import { type OutcomeRecord, Worker } from '../../src/worker/index.js';
import { startHeldServer } from '../server/held-receives.js';

/**
 * A worker over plain HTTP closed at the very moment the server answers its long poll: the
 * server sent the answer before it could see the worker stop. The answer is read all the same,
 * and its jobs, which no handler ran, go back unworked (R33) rather than stay leased until their
 * deadline.
 */

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('a worker closed as the server answers its long poll gives those jobs back unworked, over plain HTTP', async () => {
  const target = await startHeldServer();
  cleanups.push(() => target.close());
  const jobs = await target.storage.queue('jobs', { visibility: 60_000 });
  await jobs.publishBatch([{ id: 'a' }, { id: 'b' }]);
  const client = (await open(target.baseUrl, { transport: 'http' })) as RemoteBroker;
  cleanups.push(() => client.close());
  const handled: string[] = [];
  const outcomes: OutcomeRecord[] = [];
  const worker = new Worker(
    await client.queue('jobs'),
    async (job) => {
      handled.push(job.id);
    },
    { logger: silentLogger, concurrency: 2 },
  );
  worker.on('outcome', (record) => outcomes.push(record));
  await worker.start();
  const poll = await target.held();
  // The server reserves both jobs and answers, in the same turn as the worker is closed.
  const reserved = await jobs.receive(poll.reserve);
  expect(reserved.map((delivery) => delivery.id)).toEqual(['a', 'b']);
  poll.answer(reserved);
  await worker.close();
  expect(handled).toEqual([]);
  expect(outcomes.map(({ id, outcome }) => ({ id, outcome }))).toEqual([
    { id: 'b', outcome: 'released' },
    { id: 'a', outcome: 'released' },
  ]);
  expect(await jobs.stats()).toMatchObject({ ready: 2, active: 0, unworked: 2 });
  expect((await jobs.inspect()).ready).toEqual(['a', 'b']);
  expect(await jobs.job('a')).toMatchObject({ state: 'ready', deliveryCount: 0 });
});
