import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { withPostgresClient } from '../crash/postgres.js';
import { temporaryDirectory } from '../temporary-directory.js';
import {
  genericPlans,
  schemaUrl,
  sqlitePlan,
  statementsOf,
  usePostgresSchema,
} from './scaling-helpers.js';

/**
 * R24: waiting members are read in group order in two places, and each must be the first
 * entries of one index range however many wait.
 * - When a group's first member leaves (here an ack), its next member: planned for any values,
 *   PostgreSQL read every waiting member of the group and sorted them, so an ack of a group of
 *   50,000 took 14 to 21 ms more.
 * - inspect's waiting list, cut to its limit (the dashboard reads it every 2 s): both engines
 *   read every waiting job of the queue and sorted them, 33 ms (SQLite) and 59 ms (PostgreSQL)
 *   at 99,000 waiting.
 */
const NEXT_MEMBER = /\bgrp = \? AND state = 'waiting' ORDER BY group_seq LIMIT 1/;
const WAITING_LIST = /WHERE queue = \? AND state = 'waiting' ORDER BY group_seq LIMIT/;

const dir = temporaryDirectory('leaseq-scaling-waiting-');
afterEach(() => {
  vi.restoreAllMocks();
});

/** One long group among many short ones, as statistics then see groups: a few members each. */
async function fill(engine: Engine): Promise<void> {
  const queue = await engine.queue('groups', { visibility: 30_000 });
  for (let batch = 0; batch < 5; batch += 1) {
    await queue.publishBatch(
      0,
      Array.from({ length: 100 }, (_, index) => ({
        id: `long${batch * 100 + index}`,
        group: 'long',
      })),
    );
  }
  for (let batch = 0; batch < 20; batch += 1) {
    await queue.publishBatch(
      0,
      Array.from({ length: 100 }, (_, index) => ({
        group: `short${(batch * 100 + index) % 1000}`,
      })),
    );
  }
}

/** The statements of an ack of the long group's first member and of an inspect with a limit. */
async function readWaiting(
  engine: Engine,
  Connection: typeof SqliteConnection | typeof PostgresConnection,
) {
  const queue = await engine.queue('groups');
  const next = await statementsOf(Connection, NEXT_MEMBER, async () => {
    const [head] = await queue.reserve(10, { max: 1 });
    expect(head?.id).toBe('long0');
    expect(await queue.ack(10, (head as { token: number }).token)).toBe(true);
  });
  expect((await queue.job('long1'))?.state).toBe('ready');
  const list = await statementsOf(Connection, WAITING_LIST, async () => {
    expect((await queue.inspect({ limit: 3 })).waiting).toEqual(['long2', 'long3', 'long4']);
  });
  expect(next.length).toBe(1);
  expect(list.length).toBe(1);
  return { next: next[0] as (typeof next)[0], list: list[0] as (typeof list)[0] };
}

describe('R24 SQLite: waiting members in group order are one index range', () => {
  it('the next member of a group and the first waiting jobs of the queue need no sort', async () => {
    const engine = await openEngine(`sqlite:${join(dir, 'waiting.db')}`);
    try {
      await fill(engine);
      const { next, list } = await readWaiting(engine, SqliteConnection);
      expect(sqlitePlan(next)).toEqual([
        'SEARCH leaseq_jobs USING INDEX leaseq_jobs_group (queue=? AND grp=?)',
      ]);
      expect(sqlitePlan(list)).toEqual([
        'SEARCH leaseq_jobs USING COVERING INDEX leaseq_jobs_waiting (queue=?)',
      ]);
    } finally {
      await engine.close();
    }
  });
});

/** In a schema of its own (through search_path), since it gathers statistics of its tables. */
const SCHEMA = `leaseq_scaling_waiting_${process.pid}`;
const url = schemaUrl(SCHEMA);

describe('R24 PostgreSQL: waiting members in group order are one index range', () => {
  const skipReason = usePostgresSchema(SCHEMA);

  it('planned for any values, as the engine runs them, neither sorts', async (context) => {
    const skip = skipReason();
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    try {
      await fill(engine);
      await withPostgresClient((client) => client.query('ANALYZE leaseq_jobs'), url);
      const { next, list } = await readWaiting(engine, PostgresConnection);
      const [nextPlan, listPlan] = await genericPlans([next, list], url);
      expect(nextPlan).toMatch(
        /Index Scan using leaseq_jobs_group_waiting on leaseq_jobs[^\n]*\n\s*Index Cond: \(\(queue = \$1\) AND \(grp = \$2\)\)/,
      );
      expect(listPlan).toMatch(
        /Index (Only )?Scan using leaseq_jobs_waiting on leaseq_jobs[^\n]*\n\s*Index Cond: \(queue = \$1\)/,
      );
      for (const plan of [nextPlan, listPlan]) expect(plan).not.toMatch(/\bSort\b/);
    } finally {
      await engine.close();
    }
  });
});
