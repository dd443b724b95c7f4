import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Engine, openEngine, type QueueHandle } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { withPostgresClient } from '../crash/postgres.js';
import { temporaryDirectory } from '../temporary-directory.js';
import {
  genericPlans,
  type Seen,
  schemaUrl,
  sqlitePlan,
  statementsOf,
  usePostgresSchema,
} from './scaling-helpers.js';

/**
 * R14: redrive and purge of dead letters, named or all. Each job named must be found by its
 * primary key: with `state = 'dead'` beside its id, PostgreSQL took the index of dead jobs,
 * which statistics gathered before the jobs died say is nearly empty, and filtered every dead
 * job by id for each one (10,000 redriven: 31.7 s, every queue of the process waiting). And a
 * redrive or purge of all of them is a few statements, not one per job.
 */
const BY_ID = /\bid (= \?|IN \(|= ANY\()/;

const dir = temporaryDirectory('leaseq-scaling-dead-');
afterEach(() => {
  vi.restoreAllMocks();
});

const JOBS = 1500;

/**
 * A queue of JOBS jobs (some in groups) that all die by their retention at 200; `measured` runs
 * while they are still ready, as statistics gathered then know no dead job.
 */
async function deadSet(engine: Engine, measured: () => Promise<void>): Promise<QueueHandle> {
  const queue = await engine.queue('dead', { visibility: 30_000, retention: 100 });
  for (let batch = 0; batch < JOBS / 500; batch += 1) {
    await queue.publishBatch(
      0,
      Array.from({ length: 500 }, (_, index) => ({
        id: `job-${batch}-${index}`,
        ...(index % 10 === 0 ? { group: `g${index % 7}` } : {}),
      })),
    );
  }
  await measured();
  expect((await queue.stats(200)).dead).toBe(JOBS);
  // Redriven, they would die again at once.
  await engine.updateQueue('dead', { retention: null });
  return queue;
}

/** Redrives and purges, named and all; answers the statements on jobs that all of them ran. */
async function redriveAndPurge(
  queue: QueueHandle,
  Connection: typeof SqliteConnection | typeof PostgresConnection,
): Promise<{ named: Seen[]; all: Seen[] }> {
  const order = (await queue.deadLetters()).map((dead) => dead.id);
  const named = await statementsOf(Connection, /leaseq_jobs/, async () => {
    expect(await queue.redrive(300, ['job-0-1', 'job-0-2', 'missing', 'job-0-1'])).toBe(2);
    expect(await queue.purge(300, ['job-0-3', 'job-0-4', 'job-0-1', 'job-0-3'])).toBe(2);
  });
  const all = await statementsOf(Connection, /leaseq_jobs/, async () => {
    expect(await queue.redrive(300)).toBe(JOBS - 4);
  });
  // R14: the back of ready in the order they died; a group's first member stays its only
  // ready one, the others wait behind it (R24).
  const view = await queue.inspect();
  const left = order.filter((id) => !['job-0-3', 'job-0-4'].includes(id));
  expect(view.ready).toEqual(
    ['job-0-1', 'job-0-2', ...left].filter(
      (id, at, all) => all.indexOf(id) === at && !view.waiting?.includes(id),
    ),
  );
  expect(view.waiting).toHaveLength(JOBS / 10 - 7);
  expect(view.dead).toEqual([]);
  for (const id of ['job-1-0', 'job-1-5']) expect(await queue.cancel(310, id)).toBe(true);
  expect(await queue.purge(320)).toBe(2);
  return { named, all };
}

describe('R14 SQLite: redrive and purge find the jobs named by primary key', () => {
  it('each job named is one primary-key lookup', async () => {
    const engine = await openEngine(`sqlite:${join(dir, 'dead.db')}`);
    try {
      const queue = await deadSet(engine, async () => {});
      const { named } = await redriveAndPurge(queue, SqliteConnection);
      const byId = named.filter(({ sql }) => BY_ID.test(sql));
      expect(byId.length).toBeGreaterThan(0);
      for (const statement of byId) {
        expect(sqlitePlan(statement)).toEqual([
          'SEARCH leaseq_jobs USING PRIMARY KEY (queue=? AND id=?)',
        ]);
      }
    } finally {
      await engine.close();
    }
  });
});

/** In a schema of its own (through search_path), since it gathers statistics of its tables. */
const SCHEMA = `leaseq_scaling_dead_${process.pid}`;
const url = schemaUrl(SCHEMA);

describe('R14 PostgreSQL: redrive and purge find the jobs named by primary key, all of them in a few statements', () => {
  const skipReason = usePostgresSchema(SCHEMA);

  it('planned for any values from statistics that know no dead job, each lookup by id is one of the primary key', async (context) => {
    const skip = skipReason();
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    try {
      const queue = await deadSet(engine, () =>
        withPostgresClient((client) => client.query('ANALYZE leaseq_jobs'), url).then(() => {}),
      );
      const { named, all } = await redriveAndPurge(queue, PostgresConnection);
      const byId = [...named, ...all].filter(({ sql }) => BY_ID.test(sql));
      const plans = await genericPlans(byId, url);
      expect(plans.length).toBeGreaterThan(0);
      for (const [index, plan] of plans.entries()) {
        // Never the dead jobs filtered by id; a job named alone is found by its primary key.
        expect(plan).not.toContain('leaseq_jobs_dead');
        if (/\bid = \?/.test(byId[index]?.sql ?? '')) {
          expect(plan).toMatch(
            /Index Scan using leaseq_jobs_pkey on leaseq_jobs[^\n]*\n\s*Index Cond: \(\(queue = \$1\) AND \(id = \$2\)\)/,
          );
        }
      }
      // Not a statement per job: the dead jobs, a lookup per group, their new places.
      expect(all.length).toBeLessThan(20);
    } finally {
      await engine.close();
    }
  });
});
