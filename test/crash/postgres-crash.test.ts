import { afterEach, describe, expect, it } from 'vitest';
import { openEngine } from '../../src/engine/index.js';
import { runCrashRounds } from './crash-rounds.js';
import { deleteQueue, POSTGRES_URL, postgresSkipReason, uniqueQueueName } from './postgres.js';
import { killStartedChildren, runSeed } from './processes.js';

/**
 * The SQLite crash rounds (sqlite-crash.test.ts) against PostgreSQL: a child publishes and
 * consumes on a queue of its own name and is killed with SIGKILL at a random moment, five rounds
 * in a row; its connections die with it, and its open transaction must roll back entirely.
 */
const ROUNDS = Number(process.env.LEASEQ_CRASH_ROUNDS ?? 5);

const queues: string[] = [];

afterEach(async () => {
  await killStartedChildren();
  for (const name of queues.splice(0)) await deleteQueue(name);
});

describe('PostgreSQL: SIGKILL while publishing and consuming', () => {
  it('loses nothing and resurrects nothing', { timeout: 20_000 }, async (context) => {
    const skip = await postgresSkipReason();
    if (skip !== undefined) context.skip(skip);
    const queue = uniqueQueueName('pg');
    queues.push(queue);
    const seed = runSeed();
    const started = Date.now();
    const result = await runCrashRounds({
      label: 'postgres',
      url: POSTGRES_URL,
      queue,
      rounds: ROUNDS,
      seed,
      visibility: 250,
      openEngine: () => openEngine(POSTGRES_URL),
    });
    console.info(
      `postgres: seed ${seed}, ${ROUNDS} kills after ${result.killDelays.join('/')} ms, ` +
        `${result.committedJobs} jobs, ${JSON.stringify(result.counts)}, ${Date.now() - started} ms`,
    );
    expect(result.counts.rounds).toBe(ROUNDS + 1);
    expect(result.counts.publishedReturned).toBeGreaterThan(0);
    expect(result.counts.acksTrue).toBeGreaterThan(0);
  });
});
