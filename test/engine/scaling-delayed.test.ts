import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { schemaUrl, statementsOf, usePostgresSchema } from './scaling-helpers.js';

/**
 * R3c, R30: delayed jobs that come due together join ready, and ready or delayed jobs whose
 * expiry comes together die, in one step. On PostgreSQL that must be a few statements, not a
 * round trip per job (20,000 delayed jobs due at once took 7.7 s), in the same order as ever:
 * each priority's back in availableAt then publish order, the dead set in expiry order, a
 * group's next member in its place.
 */
const JOBS = 300;

const dir = temporaryDirectory('leaseq-scaling-delayed-');
afterEach(() => {
  vi.restoreAllMocks();
});

/** JOBS delayed jobs of two priorities due at 100..102, some in groups (their others wait). */
async function dueTogether(engine: Engine): Promise<void> {
  const queue = await engine.queue('delayed', { visibility: 30_000 });
  await queue.publishBatch(
    0,
    Array.from({ length: JOBS }, (_, index) => ({
      id: `delayed-${index}`,
      delay: 100 + ((index * 7) % 3),
      priority: index % 2 === 0 ? 0 : 5,
      ...(index % 10 === 0 ? { group: `g${index % 4}` } : {}),
    })),
  );
  await queue.publish(1, { id: 'ready' });
}

/** JOBS jobs that expire at 100 (retention) or earlier (their own), six in two groups. */
async function expireTogether(engine: Engine): Promise<void> {
  const queue = await engine.queue('expiring', { visibility: 30_000, retention: 100 });
  await queue.publishBatch(
    0,
    Array.from({ length: JOBS }, (_, index) => ({
      id: `expiring-${index}`,
      ...(index % 3 === 0 ? { expiresAt: 50 + (index % 5) } : {}),
      ...(index % 50 === 0 ? { group: `g${index % 100}` } : {}),
      ...(index % 7 === 0 ? { delay: 10 } : {}),
    })),
  );
}

/** What the queues hold after the step at 200: ready, waiting and dead ids, in order. */
async function after(engine: Engine): Promise<unknown> {
  const views: unknown[] = [];
  for (const name of ['delayed', 'expiring']) {
    const queue = await engine.queue(name);
    await queue.stats(200);
    const view = await queue.inspect();
    views.push({
      ...view,
      dead: (await queue.deadLetters()).map((dead) => [dead.id, dead.reason]),
    });
  }
  return views;
}

/** The same jobs in the pure core (the memory engine): what every engine must give. */
async function expected(): Promise<unknown> {
  const engine = await openEngine('memory:');
  try {
    await dueTogether(engine);
    await expireTogether(engine);
    return await after(engine);
  } finally {
    await engine.close();
  }
}

describe('R3c R30 SQLite: jobs due or expiring together keep their order', () => {
  it('promoted and expired as the core does', async () => {
    const engine = await openEngine(`sqlite:${join(dir, 'delayed.db')}`);
    try {
      await dueTogether(engine);
      await expireTogether(engine);
      expect(await after(engine)).toEqual(await expected());
    } finally {
      await engine.close();
    }
  });
});

/** In a schema of its own (through search_path), as the other PostgreSQL tests of this kind. */
const SCHEMA = `leaseq_scaling_delayed_${process.pid}`;
const url = schemaUrl(SCHEMA);

describe('R3c R30 PostgreSQL: jobs due or expiring together are moved by a few statements', () => {
  const skipReason = usePostgresSchema(SCHEMA);

  it('one statement promotes them, one kills them, in the order the core gives', async (context) => {
    const skip = skipReason();
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    try {
      await dueTogether(engine);
      await expireTogether(engine);
      const updates = await statementsOf(
        PostgresConnection,
        /^\s*UPDATE leaseq_jobs\b/,
        async () => {
          await (await engine.queue('delayed')).stats(200);
          await (await engine.queue('expiring')).stats(200);
        },
      );
      // The promotion; the deaths; the next member of a group each (four); the gaps in ready.
      expect(updates.length).toBeLessThan(10);
      expect(await after(engine)).toEqual(await expected());
    } finally {
      await engine.close();
    }
  });
});
