import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { withPostgresClient } from '../crash/postgres.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { genericPlans, schemaUrl, statementsOf, usePostgresSchema } from './scaling-helpers.js';

/**
 * R24: a job published into a group, redriven, or arriving from another queue waits when its
 * group has a member that is not dead. That question must be one lookup in an index, whatever
 * the queue holds: SQLite planned it as a read of every job of the queue (the group index
 * needed each job's row for its state), so 100 publishes into new groups took 6 ms at no jobs
 * and 472 ms at 50,000.
 */
const LIVE_MEMBER = /\bgrp = \? AND state <> 'dead'/;

const dir = temporaryDirectory('leaseq-scaling-groups-');
afterEach(() => {
  vi.restoreAllMocks();
});

/** A publish into a new group and an existing one, a redrive and an arrival from another queue. */
async function askForMembers(engine: Engine, now: number): Promise<void> {
  const queue = await engine.queue('groups');
  await queue.publishBatch(now, [{ group: 'new' }, { group: 'g1' }]);
  const dead = await queue.publish(now, { id: 'dies', group: 'g2' });
  expect(dead.duplicate).toBe(false);
  await queue.cancel(now, 'dies');
  expect(await queue.redrive(now, ['dies'])).toBe(1);
  const source = await engine.queue('source', { deadLetterQueue: 'groups', maxDeliveries: 1 });
  await source.publish(now, { id: 'arrives', group: 'g3' });
  const [delivery] = await source.reserve(now, { max: 1 });
  await source.nack(now, (delivery as { token: number }).token, { requeue: false });
  expect((await queue.job('arrives'))?.state).toBe('waiting');
}

/** A queue of many jobs, most of them in groups (a member each ready, the rest waiting). */
async function fill(engine: Engine): Promise<void> {
  const queue = await engine.queue('groups', { visibility: 30_000 });
  for (let batch = 0; batch < 4; batch += 1) {
    await queue.publishBatch(
      0,
      Array.from({ length: 500 }, (_, index) => ({
        group: index % 5 === 0 ? undefined : `g${index % 50}`,
      })),
    );
  }
}

describe('R24 SQLite: whether a group has live members is one index lookup', () => {
  it('a publish, a redrive and an arrival read leaseq_jobs_group_live, not every job of the queue', async () => {
    const engine = await openEngine(`sqlite:${join(dir, 'groups.db')}`);
    try {
      await fill(engine);
      const seen = await statementsOf(SqliteConnection, LIVE_MEMBER, () =>
        askForMembers(engine, 10),
      );
      // The publish asks for both groups, the redrive and the arrival for theirs.
      expect(seen.length).toBeGreaterThanOrEqual(4);
      for (const { sql, params, connection } of seen) {
        const plan = (
          (connection as SqliteConnection).db
            .prepare(`EXPLAIN QUERY PLAN ${sql}`)
            .all(...params) as { detail: string }[]
        ).map((row) => row.detail);
        expect(plan).toEqual([
          'SEARCH leaseq_jobs USING COVERING INDEX leaseq_jobs_group_live (queue=? AND grp=?)',
        ]);
      }
      const stats = await (await engine.queue('groups')).stats(20);
      // 40 groups of 40 (one member each ready), and g1, g2 and g3 took one more each.
      expect(stats.waiting).toBe(1600 - 40 + 3);
    } finally {
      await engine.close();
    }
  });
});

/** In a schema of its own (through search_path), since it gathers statistics of its tables. */
const SCHEMA = `leaseq_scaling_groups_${process.pid}`;
const url = schemaUrl(SCHEMA);

describe('R24 PostgreSQL: whether a group has live members is one index lookup', () => {
  const skipReason = usePostgresSchema(SCHEMA);

  it('planned for any values, as the engine runs it, it reads leaseq_jobs_group_live', async (context) => {
    const skip = skipReason();
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    try {
      await fill(engine);
      await withPostgresClient((client) => client.query('ANALYZE leaseq_jobs'), url);
      const seen = await statementsOf(PostgresConnection, LIVE_MEMBER, () =>
        askForMembers(engine, 10),
      );
      expect(seen.length).toBeGreaterThanOrEqual(4);
      const plans = await genericPlans(seen, url);
      for (const plan of plans) {
        expect(plan).toMatch(
          /Index (Only )?Scan using leaseq_jobs_group_live on leaseq_jobs[^\n]*\n\s*Index Cond: \(\(queue = \$1\) AND \(grp = \$2\)\)/,
        );
      }
    } finally {
      await engine.close();
    }
  });
});
