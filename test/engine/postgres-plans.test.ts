import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { scanPlaceholders } from '../../src/engine/postgres/placeholders.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { POSTGRES_DIALECT } from '../../src/engine/postgres/postgres-engine.js';
import { POSTGRES_URL, postgresSkipReason, withPostgresClient } from '../crash/postgres.js';

/**
 * The one-statement path's functions keep their statements' plans for the life of a connection
 * (the reserve's from its first call, 0019; elsewhere PostgreSQL may settle on a PL/pgSQL
 * statement's generic plan after five calls), until the table's statistics change. A plan made
 * while the jobs table was nearly empty, by statistics that said so, must still go through the
 * indexes once the queue holds thousands of jobs: a scan of the whole table per reserve made a
 * drain 28 times slower (34 ms a job at a backlog of 100,000).
 *
 * In a schema of its own (through search_path), since it gathers statistics of its tables.
 */
const SCHEMA = `leaseq_plans_${process.pid}`;
const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${SCHEMA}`)}`;
let skip: string | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip !== undefined) return;
  await withPostgresClient((client) => client.query(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`), url);
});

afterAll(async () => {
  if (skip !== undefined) return;
  await withPostgresClient(
    (client) => client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`),
    url,
  );
});

/** An engine on this test's schema and a client of its own (not yet connected), closed after `work`. */
async function withEngineAndClient(
  work: (engine: Engine, client: pg.Client) => Promise<void>,
): Promise<void> {
  const engine = await openEngine(url);
  const client = new pg.Client({ connectionString: url });
  try {
    await work(engine, client);
  } finally {
    await client.end().catch(() => undefined);
    await engine.close();
  }
}

/** One reserve and one ack as the engine sends them; the token reserved. */
async function reserveAndAck(client: pg.Client, queue: string, now: number): Promise<number> {
  const { rows } = await client.query('SELECT * FROM leaseq_reserve_next($1, $2, $3, $4, $5, $6)', [
    queue,
    now,
    1,
    30_000,
    true,
    1000,
  ]);
  const row = rows[0] as { fallback: boolean; token: string | null };
  expect(row.fallback).toBe(false);
  const token = Number(row.token);
  const acked = await client.query('SELECT * FROM leaseq_ack($1, $2, $3::bigint[], $4)', [
    queue,
    now,
    [token],
    true,
  ]);
  expect(acked.rows).toEqual([{ fallback: false, token: String(token) }]);
  return token;
}

/** The plan of every statement `client` runs from now on, nested ones included. */
async function explainedPlans(client: pg.Client): Promise<string[]> {
  const plans: string[] = [];
  client.on('notice', (notice) => plans.push(notice.message ?? ''));
  await client.query("LOAD 'auto_explain'");
  await client.query('SET auto_explain.log_min_duration = 0');
  await client.query('SET auto_explain.log_nested_statements = on');
  await client.query("SET auto_explain.log_level = 'notice'");
  return plans;
}

describe('R21 PostgreSQL: the one-statement path keeps to its indexes', () => {
  it('plans made while the jobs table was nearly empty still use its indexes at a backlog of thousands', async (context) => {
    if (skip !== undefined) context.skip(skip);
    await withEngineAndClient(async (engine, client) => {
      const queue = await engine.queue('plans', { visibility: 30_000 });
      await queue.publishBatch(
        0,
        Array.from({ length: 20 }, (_, index) => ({ id: `small-${index}` })),
      );
      await withPostgresClient((admin) => admin.query('VACUUM ANALYZE leaseq_jobs'), url);
      await client.connect();
      // More than the five calls after which PostgreSQL settles on a statement's cached plan.
      for (let call = 0; call < 10; call += 1) await reserveAndAck(client, 'plans', 10 + call);
      for (let batch = 0; batch < 5; batch += 1) {
        await queue.publishBatch(
          100,
          Array.from({ length: 1000 }, (_, index) => ({ id: `large-${batch}-${index}` })),
        );
      }

      const plans = await explainedPlans(client);
      await reserveAndAck(client, 'plans', 200);

      const onJobs = plans.filter((plan) => /\bleaseq_jobs\b/.test(plan));
      expect(onJobs.join('\n')).toContain('Index Scan using leaseq_jobs_ready');
      expect(onJobs.join('\n')).toContain('Index Scan using leaseq_jobs_token');
      for (const plan of onJobs) expect(plan).not.toMatch(/Seq Scan on leaseq_jobs/);
      expect((await queue.stats(300)).ready).toBe(10 + 5000 - 1);
    });
  });

  it('a queue newer than the statistics is reserved from through its ready index and acked through its token index, by one plan kept for every call', async (context) => {
    if (skip !== undefined) context.skip(skip);
    await withEngineAndClient(async (engine, client) => {
      // Statistics gathered while the table held another queue's jobs alone: they know no job
      // of the queue created after them, and a plan for its name expects one row at most.
      const older = await engine.queue('older', { visibility: 30_000 });
      await older.publishBatch(
        0,
        Array.from({ length: 2000 }, () => ({})),
      );
      await withPostgresClient((admin) => admin.query('ANALYZE leaseq_jobs'), url);
      const newer = await engine.queue('newer', { visibility: 30_000 });
      for (let batch = 0; batch < 3; batch += 1) {
        await newer.publishBatch(
          1,
          Array.from({ length: 1000 }, () => ({})),
        );
      }
      await client.connect();
      const plans = await explainedPlans(client);
      // Past the five calls after which PostgreSQL may settle on a generic plan by itself.
      for (let call = 0; call < 8; call += 1) await reserveAndAck(client, 'newer', 10 + call);

      const updates = plans.filter((plan) => /Update on leaseq_jobs/.test(plan));
      expect(updates).toHaveLength(8);
      for (const plan of updates) {
        // Not the primary key (queue, id), filtering every job of the queue for a ready one.
        expect(plan).toMatch(
          /(Index Scan using|Bitmap Index Scan on) leaseq_jobs_ready[^\n]*\n\s*Index Cond: \(\(queue = \$\d+\) AND \(ready_pos >= \$\d+\)/,
        );
        expect(plan).not.toContain("'newer'::text");
      }
      // Its acks take each job by the token index, not through the primary key either.
      const deletes = plans.filter((plan) => /Delete on leaseq_jobs/.test(plan));
      expect(deletes).toHaveLength(8);
      for (const plan of deletes) {
        expect(plan).toMatch(/Index Scan using leaseq_jobs_token/);
        expect(plan).not.toContain("'newer'::text");
      }
      expect((await newer.stats(20)).ready).toBe(3000 - 8);
    });
  });

  it("the engine's transactions plan a statement for any values, a caller's transaction as the database's settings say", async (context) => {
    if (skip !== undefined) context.skip(skip);
    await withEngineAndClient(async (engine, client) => {
      const queue = await engine.queue('any-values', { visibility: 30_000 });
      await queue.publishBatch(
        0,
        Array.from({ length: 20 }, () => ({})),
      );
      await client.connect();
      const plans = await explainedPlans(client);
      const connection = new PostgresConnection(client);
      // As the general path reserves: its statements after the first carry parameters.
      const reserveStatement = async (forCaller: boolean) => {
        plans.length = 0;
        await connection.begin('lease', forCaller);
        await connection.query('SELECT name FROM leaseq_queues WHERE name = ?', ['any-values']);
        await connection.query(
          "SELECT id FROM leaseq_jobs WHERE queue = ? AND state = 'ready' AND ready_pos >= ? AND ready_pos < ?",
          ['any-values', 1, 2],
        );
        await connection.rollback();
        return plans.find((plan) => plan.includes('FROM leaseq_jobs WHERE')) ?? '';
      };

      // For any values: a queue that the statistics do not know (yet) is not expected to hold a
      // row or so, which would take its jobs through the primary key, filtering every one.
      const engines = await reserveStatement(false);
      expect(engines).toContain('(queue = $1)');
      expect(engines).not.toContain("'any-values'::text");
      const callers = await reserveStatement(true);
      expect(callers).toContain("'any-values'::text");
    });
  });

  it('a table measured nearly empty is analyzed by the first reserve of a queue with thousands ready, which then goes through the ready index', async (context) => {
    if (skip !== undefined) context.skip(skip);
    await withEngineAndClient(async (engine, client) => {
      const estimate = async () =>
        withPostgresClient(async (admin) => {
          const { rows } = await admin.query(
            "SELECT reltuples::float8 AS rows FROM pg_class WHERE oid = 'leaseq_jobs'::regclass",
          );
          return Number((rows[0] as { rows: number }).rows);
        }, url);
      await withPostgresClient((admin) => admin.query('TRUNCATE leaseq_jobs'), url);
      const drained = await engine.queue('drained', { visibility: 30_000 });
      const kept = await engine.queue('kept', { visibility: 30_000 });
      const publish = async (count: number, now: number) => {
        for (let start = 0; start < count; start += 500) {
          await drained.publishBatch(
            now,
            Array.from({ length: Math.min(500, count - start) }, () => ({
              payload: 'x'.repeat(100),
            })),
          );
        }
      };
      // Thousands of jobs come and go, and a few stay behind them, so that VACUUM keeps the
      // pages (of the table and its indexes): it then measures 20 rows in them.
      await publish(5000, 1);
      await kept.publishBatch(
        1,
        Array.from({ length: 20 }, () => ({})),
      );
      for (;;) {
        const deliveries = await drained.reserve(2, { max: 500 });
        if (deliveries.length === 0) break;
        await drained.ackMany(
          2,
          deliveries.map((delivery) => delivery.token),
        );
      }
      await withPostgresClient((admin) => admin.query('VACUUM leaseq_jobs'), url);
      expect(await estimate()).toBeLessThan(100);
      await publish(20_000, 3);

      await client.connect();
      const plans = await explainedPlans(client);
      await reserveAndAck(client, 'drained', 10);

      expect(await estimate()).toBeGreaterThanOrEqual(20_000);
      const updates = plans.filter((plan) => /Update on leaseq_jobs/.test(plan));
      expect(updates.join('\n')).toContain('Index Scan using leaseq_jobs_ready');
      for (const plan of updates) expect(plan).not.toContain('Index Scan using leaseq_jobs_pkey');
      expect((await drained.stats(20)).ready).toBe(20_000 - 1);
    });
  });

  it('R17 stats reads the age of the oldest ready job through its index, not through every ready job, planned for any values', async (context) => {
    if (skip !== undefined) context.skip(skip);
    await withEngineAndClient(async (engine, client) => {
      const queue = await engine.queue('oldest', { visibility: 30_000 });
      // Statistics that know of no job of the queue: a plan for any values then looks cheap
      // either way, and must still take the index once thousands are ready.
      await withPostgresClient((admin) => admin.query('VACUUM ANALYZE leaseq_jobs'), url);
      for (let batch = 0; batch < 4; batch += 1) {
        await queue.publishBatch(
          100 + batch,
          Array.from({ length: 1000 }, () => ({})),
        );
      }
      // The oldest ready job is not at the front: the front one was requeued later (R9).
      const [front] = await queue.reserve(200, { max: 1 });
      await queue.nack(210, (front as { token: number }).token);

      await client.connect();
      const plans = await explainedPlans(client);
      const connection = new PostgresConnection(client);
      await connection.begin('lease');
      // As the engine's stats runs it: after the queue's row, with its parameter.
      await connection.query('SELECT name FROM leaseq_queues WHERE name = ?', ['oldest']);
      const [oldest] = await connection.query<{ since: number }>(
        POSTGRES_DIALECT.oldestReadyOf('?'),
        ['oldest'],
      );
      await connection.rollback();

      expect(Number(oldest?.since)).toBe(100);
      const plan = plans.find((entry) => entry.includes('ready_since')) ?? '';
      // The first entry of the index's range for the queue, not all of them.
      expect(plan).toMatch(
        /Limit[^\n]*\n\s*->\s*Index Only Scan using leaseq_jobs_ready_since[^\n]*\n\s*Index Cond: \(queue = \$1\)/,
      );
      expect(plan).not.toContain('Sort');
      expect(plan).not.toContain('Aggregate');
      expect((await queue.stats(300)).oldestReadyAge).toBe(200);
    });
  });
});

describe('PostgreSQL: pruneInbox reads the entries it deletes, not every entry of the consumer', () => {
  it('the prune statement takes leaseq_inbox_processed by consumer and time, and deletes only the old entries', async (context) => {
    if (skip !== undefined) context.skip(skip);
    await withEngineAndClient(async (engine, client) => {
      await withPostgresClient(async (admin) => {
        await admin.query(
          `INSERT INTO leaseq_inbox (consumer, job_id, processed_at)
           SELECT 'ledger', 'job-' || n, 1000 + n FROM generate_series(0, 19999) AS n`,
        );
        await admin.query(
          "INSERT INTO leaseq_inbox (consumer, job_id, processed_at) VALUES ('other', 'job-0', 0)",
        );
        await admin.query('ANALYZE leaseq_inbox');
      }, url);
      const statements: string[] = [];
      const run = PostgresConnection.prototype.run;
      const spy = vi.spyOn(PostgresConnection.prototype, 'run').mockImplementation(function (
        this: PostgresConnection,
        sql: string,
        params?: readonly (string | number | null)[],
      ) {
        statements.push(sql);
        return run.call(this, sql, params);
      });
      const transaction = engine.transaction?.bind(engine);
      if (transaction === undefined) throw new Error('the PostgreSQL engine takes transactions');
      try {
        expect(await transaction((tx) => tx.pruneInbox('ledger', 1100))).toBe(100);
      } finally {
        spy.mockRestore();
      }
      expect(await transaction((tx) => tx.claimOnce('ledger', 'job-99', 2000))).toBe(true);
      expect(await transaction((tx) => tx.claimOnce('ledger', 'job-100', 2000))).toBe(false);
      expect(await transaction((tx) => tx.claimOnce('other', 'job-0', 2000))).toBe(false);

      const prune = statements.filter((sql) => /DELETE FROM leaseq_inbox/.test(sql));
      expect(prune).toHaveLength(1);
      await client.connect();
      const { rows } = await client.query(
        `EXPLAIN ${scanPlaceholders(prune[0] as string).numbered}`,
        ['ledger', 1100],
      );
      const plan = rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
      // A range of the index for the consumer before the time, not every entry of the consumer.
      expect(plan).toMatch(
        /Index Cond: \(\(consumer = 'ledger'::text\) AND \(processed_at < '1100'::bigint\)\)/,
      );
    });
  });
});
