import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { withPostgresClient } from '../crash/postgres.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { genericPlans, schemaUrl, statementsOf, usePostgresSchema } from './scaling-helpers.js';

/**
 * R4: acked ids are remembered for the queue's dedupWindow, and every step that time drives
 * forgets those whose window ended. That must read what it forgets, not every id the queue
 * remembers: through the primary key it did, a step of 1.4 ms at no ids remembered and 16 ms
 * at 100,000 on SQLite (13 and 59 ms on PostgreSQL).
 */
const FORGET = /^DELETE FROM leaseq_acked WHERE queue = \? AND forget_at <= \?$/;

const dir = temporaryDirectory('leaseq-scaling-remembered-');
afterEach(() => {
  vi.restoreAllMocks();
});

/** 5000 ids, 100 acked at each of 0..49, remembered for 1000 ms. */
async function remember(engine: Engine): Promise<void> {
  const queue = await engine.queue('remembered', { visibility: 30_000, dedupWindow: 1000 });
  for (let batch = 0; batch < 50; batch += 1) {
    await queue.publishBatch(
      batch,
      Array.from({ length: 100 }, (_, index) => ({ id: `id-${batch}-${index}` })),
    );
    const deliveries = await queue.reserve(batch, { max: 100 });
    await queue.ackMany(
      batch,
      deliveries.map((delivery) => delivery.token),
    );
  }
  // A delayed job makes 1020 a step's time.
  await queue.publish(50, { delay: 970 });
}

/** The step at 1020, which forgets what was acked at 0..20 and keeps the rest. */
async function step(engine: Engine): Promise<void> {
  const queue = await engine.queue('remembered');
  expect((await queue.stats(1020)).ready).toBe(1);
  expect((await queue.publish(1020, { id: 'id-20-0' })).duplicate).toBe(false);
  expect((await queue.publish(1020, { id: 'id-21-0' })).duplicate).toBe(true);
}

describe('R4 SQLite: a step forgets acked ids through an index of when each is forgotten', () => {
  it('the statement reads leaseq_acked_forget from the queue to the time, not every id remembered', async () => {
    const engine = await openEngine(`sqlite:${join(dir, 'remembered.db')}`);
    try {
      await remember(engine);
      const seen = await statementsOf(SqliteConnection, FORGET, () => step(engine));
      expect(seen).toHaveLength(1);
      for (const { sql, params, connection } of seen) {
        const plan = (
          (connection as SqliteConnection).db
            .prepare(`EXPLAIN QUERY PLAN ${sql}`)
            .all(...params) as { detail: string }[]
        ).map((row) => row.detail);
        expect(plan).toEqual([
          'SEARCH leaseq_acked USING INDEX leaseq_acked_forget (queue=? AND forget_at<?)',
        ]);
      }
    } finally {
      await engine.close();
    }
  });
});

/** In a schema of its own (through search_path), since it gathers statistics of its tables. */
const SCHEMA = `leaseq_scaling_remembered_${process.pid}`;
const url = schemaUrl(SCHEMA);

describe('R4 PostgreSQL: a step forgets acked ids through an index of when each is forgotten', () => {
  const skipReason = usePostgresSchema(SCHEMA);

  it('planned for any values, as the engine runs it, it reads leaseq_acked_forget up to the time', async (context) => {
    const skip = skipReason();
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    try {
      await remember(engine);
      await withPostgresClient((client) => client.query('ANALYZE leaseq_acked'), url);
      const seen = await statementsOf(PostgresConnection, FORGET, () => step(engine));
      expect(seen).toHaveLength(1);
      const [plan] = await genericPlans(seen, url);
      expect(plan).toMatch(
        /(Index Scan using|Bitmap Index Scan on) leaseq_acked_forget[^\n]*\n\s*Index Cond: \(\(queue = \$1\) AND \(forget_at <= \$2\)\)/,
      );
    } finally {
      await engine.close();
    }
  });
});
