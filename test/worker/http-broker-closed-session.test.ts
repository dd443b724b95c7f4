import { afterEach, expect, it } from 'vitest';
import { openRemote } from '../../src/client/index.js';
import { type OutcomeRecord, silentLogger, work } from '../../src/worker/index.js';
import { until } from '../until.js';
import { memoryServer } from './remote-harness.js';

/**
 * A worker over plain HTTP with a consumer session (R16): closing the worker, or the remote
 * client under it, releases the jobs of its session at once, as over the stream, rather than
 * leave them leased until the session times out.
 */

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A worker over plain HTTP whose two handlers hold their jobs until their signals fire. */
async function heldWorker() {
  const server = await memoryServer(cleanups);
  const jobs = await server.inner.queue('jobs', { visibility: 600_000 });
  await jobs.publishBatch([{ id: 'a' }, { id: 'b' }]);
  const client = await openRemote(server.url, { transport: 'http', timeoutMs: 600_000 });
  cleanups.push(() => client.close({ signal: AbortSignal.abort() }));
  const started: string[] = [];
  const reasons: unknown[] = [];
  const outcomes: OutcomeRecord[] = [];
  const worker = await work(
    await client.queue('jobs'),
    async (job, ctx) => {
      started.push(job.id);
      await new Promise<void>((resolve) => {
        ctx.signal.addEventListener('abort', () => {
          reasons.push((ctx.signal.reason as { reason?: unknown }).reason);
          resolve();
        });
      });
    },
    // Heartbeats every 5 s: the session would end by its timeout (15 s) only well after the
    // worker is told of its close.
    { logger: silentLogger, concurrency: 2, session: { timeout: 15_000 } },
  );
  worker.on('outcome', (record) => outcomes.push(record));
  cleanups.push(() => worker.close({ timeout: 0 }));
  await until(() => started.length === 2, { what: 'both jobs to start' });
  expect(await jobs.stats()).toMatchObject({ active: 2, sessions: 1 });
  return { jobs, client, worker, reasons, outcomes };
}

it('closing a worker over plain HTTP releases the jobs of its session at once', async () => {
  const { jobs, worker, outcomes } = await heldWorker();
  await worker.close({ timeout: 0 });
  expect(await jobs.stats()).toMatchObject({ ready: 2, active: 0, sessions: 0 });
  expect(outcomes.map(({ outcome }) => outcome)).toEqual(['released', 'released']);
});

it('closing the client under a worker over plain HTTP ends its session at once, and the worker sees it end', async () => {
  const { jobs, client, reasons } = await heldWorker();
  await client.close();
  expect(await jobs.stats()).toMatchObject({ ready: 2, active: 0, sessions: 0 });
  // Told at its next heartbeat, answered SESSION_CLOSED as over the stream.
  await until(() => reasons.length === 2, { what: 'both handlers to be told', timeout: 10_000 });
  expect(reasons).toEqual(['session-ended', 'session-ended']);
});
