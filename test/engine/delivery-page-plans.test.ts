import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { POSTGRES_URL, postgresSkipReason, withPostgresClient } from '../crash/postgres.js';
import { temporaryDirectory } from '../temporary-directory.js';

/**
 * R34: a page of live deliveries is a range of the token index cut by LIMIT, from its cursor
 * on: the first page of thousands in flight (the dashboard's, every 2 s) reads a page's rows,
 * not every live delivery of the queue.
 */

/** 3,000 jobs, 2,000 of them in flight (tokens 1 to 2,000). */
async function busyQueue(engine: Engine, name: string) {
  const queue = await engine.queue(name, { visibility: 3_600_000 });
  for (let at = 0; at < 3000; at += 500) {
    await queue.publishBatch(
      1,
      Array.from({ length: 500 }, (_, n) => ({ id: `job-${at + n}` })),
    );
  }
  await queue.reserve(2, { max: 2000 });
  return queue;
}

/** The statements `prototype.query` ran while `action` ran, each with its parameters. */
async function queriesOf(
  prototype: { query: (sql: string, params?: readonly SqlValue[]) => Promise<unknown> },
  action: () => Promise<unknown>,
): Promise<[string, SqlValue[]][]> {
  const queries: [string, SqlValue[]][] = [];
  const query = prototype.query;
  const spy = vi.spyOn(prototype, 'query').mockImplementation(function (
    this: unknown,
    sql: string,
    params: readonly SqlValue[] = [],
  ) {
    queries.push([sql, [...params]]);
    return query.call(this, sql, params) as never;
  });
  try {
    await action();
  } finally {
    spy.mockRestore();
  }
  return queries.filter(([sql]) => /state = 'active'\s+ORDER BY token/.test(sql));
}

/** Two pages of 10 in token order, the second after the first's cursor. */
async function twoPages(queue: Awaited<ReturnType<typeof busyQueue>>): Promise<void> {
  const first = await queue.deliveryPage({ limit: 10 });
  expect(first.deliveries.map((delivery) => delivery.token)).toEqual(
    Array.from({ length: 10 }, (_, n) => n + 1),
  );
  const second = await queue.deliveryPage({ limit: 10, after: first.next as string });
  expect(second.deliveries.map((delivery) => delivery.token)).toEqual(
    Array.from({ length: 10 }, (_, n) => n + 11),
  );
  expect(second.next).toBe('20');
}

describe('R34 SQLite: a page of live deliveries is a range of leaseq_jobs_token with a LIMIT', () => {
  const dir = temporaryDirectory('leaseq-delivery-plans-');

  it('the first page and the page after a cursor search the token index from the cursor, one row past the page', async () => {
    const file = join(dir, 'pages.db');
    const engine = await openEngine(`sqlite:${file}`);
    let pages: [string, SqlValue[]][];
    try {
      const queue = await busyQueue(engine, 'pages');
      pages = await queriesOf(SqliteConnection.prototype, () => twoPages(queue));
    } finally {
      await engine.close();
    }
    // The queue, the cursor (0 for the first page) and one more than the page.
    expect(pages.map(([, params]) => params)).toEqual([
      ['pages', 0, 11],
      ['pages', 10, 11],
    ]);
    for (const [sql] of pages) expect(sql).toMatch(/ORDER BY token LIMIT \?$/);
    const db = new Database(file, { readonly: true });
    try {
      for (const [sql, params] of pages) {
        const plan = (
          db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]
        ).map((row) => row.detail);
        // In token order from the index: no sort of every live delivery before the LIMIT.
        expect(plan).toEqual([
          'SEARCH leaseq_jobs USING INDEX leaseq_jobs_token (queue=? AND token>?)',
        ]);
      }
    } finally {
      db.close();
    }
  });
});

/** In a schema of its own (through search_path), since it gathers statistics of its tables. */
const SCHEMA = `leaseq_delivery_plans_${process.pid}`;
const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${SCHEMA}`)}`;
let skip: string | undefined;

describe('R34 PostgreSQL: a page of live deliveries is a range of leaseq_jobs_token with a LIMIT', () => {
  beforeAll(async () => {
    skip = await postgresSkipReason();
    if (skip !== undefined) return;
    await withPostgresClient(
      (client) => client.query(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`),
      url,
    );
  });

  afterAll(async () => {
    if (skip !== undefined) return;
    await withPostgresClient(
      (client) => client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`),
      url,
    );
  });

  it('the page statement, planned for any values as the engine plans it, scans the token index under a Limit', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    let pages: [string, SqlValue[]][];
    try {
      const queue = await busyQueue(engine, 'pages');
      await withPostgresClient((admin) => admin.query('VACUUM ANALYZE leaseq_jobs'), url);
      pages = await queriesOf(PostgresConnection.prototype, () => twoPages(queue));
    } finally {
      await engine.close();
    }
    expect(pages.map(([, params]) => params)).toEqual([
      ['pages', 0, 11],
      ['pages', 10, 11],
    ]);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const plans: string[] = [];
      client.on('notice', (notice) => plans.push(notice.message ?? ''));
      await client.query("LOAD 'auto_explain'");
      await client.query('SET auto_explain.log_min_duration = 0');
      await client.query("SET auto_explain.log_level = 'notice'");
      const connection = new PostgresConnection(client);
      for (const [sql, params] of pages) {
        plans.length = 0;
        // As the engine's reads run it: in a transaction whose statements get a plan for any
        // values, after the queue's row (the first statement travels with BEGIN, inlined).
        await connection.begin('lease');
        await connection.query('SELECT name FROM leaseq_queues WHERE name = ?', ['pages']);
        const rows = await connection.query(sql, params);
        await connection.rollback();
        expect(rows).toHaveLength(11);
        const plan = plans.find((entry) => entry.includes('leaseq_jobs_token')) ?? '';
        expect(plan).toMatch(
          /Limit[^\n]*\n\s*->\s*Index Scan using leaseq_jobs_token on leaseq_jobs[^\n]*\n\s*Index Cond: \(\(queue = \$1\) AND \(token > \$2\)\)/,
        );
        expect(plan).not.toContain('Sort');
        expect(plan).not.toContain('Seq Scan');
      }
    } finally {
      await client.end();
    }
  });
});
