import { afterAll, beforeAll, vi } from 'vitest';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import type { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { POSTGRES_URL, postgresSkipReason, withPostgresClient } from '../crash/postgres.js';

/**
 * What the scaling tests read of the statements an engine runs: which ones, and how SQLite or
 * PostgreSQL plans them, so that a cost that grows shows as a plan or a count, never a time.
 */
export interface Statement {
  sql: string;
  params: readonly SqlValue[];
}

export type Connection = SqliteConnection | PostgresConnection;

/** A statement as a connection ran it. */
export type Seen = Statement & { connection: Connection };

/**
 * Every statement matching `pick` that connections of class `Connection` run during `work`,
 * once per parameter list (a `runEach` is one statement per row: a round trip each on
 * PostgreSQL).
 */
export async function statementsOf(
  Connection: typeof SqliteConnection | typeof PostgresConnection,
  pick: RegExp,
  work: () => Promise<void>,
): Promise<Seen[]> {
  const seen: Seen[] = [];
  const { query, run, runEach } = Connection.prototype;
  const note = (connection: Connection, sql: string, params: readonly SqlValue[]) => {
    if (pick.test(sql)) seen.push({ sql, params, connection });
  };
  vi.spyOn(Connection.prototype, 'query').mockImplementation(function (
    this: Connection,
    sql: string,
    params: readonly SqlValue[] = [],
  ) {
    note(this, sql, params);
    return query.call(this, sql, params);
  } as typeof query);
  vi.spyOn(Connection.prototype, 'run').mockImplementation(function (
    this: Connection,
    sql: string,
    params: readonly SqlValue[] = [],
  ) {
    note(this, sql, params);
    return run.call(this, sql, params);
  });
  vi.spyOn(Connection.prototype, 'runEach').mockImplementation(function (
    this: Connection,
    sql: string,
    paramLists: readonly (readonly SqlValue[])[],
  ) {
    for (const params of paramLists) note(this, sql, params);
    return runEach.call(this, sql, paramLists);
  });
  try {
    await work();
  } finally {
    vi.restoreAllMocks();
  }
  return seen;
}

/** SQLite's plan of a statement for the values it ran with (EXPLAIN QUERY PLAN). */
export function sqlitePlan({ sql, params, connection }: Seen): string[] {
  return (
    (connection as SqliteConnection).db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as {
      detail: string;
    }[]
  ).map((row) => row.detail);
}

/** The URL of a schema of its own (through search_path): a test that gathers statistics. */
export function schemaUrl(schema: string): string {
  return `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

/**
 * Makes `schema` before the tests of the describe it is called in and drops it after; answers
 * why PostgreSQL tests skip (undefined: they run), read once the tests start.
 */
export function usePostgresSchema(schema: string): () => string | undefined {
  const url = schemaUrl(schema);
  let skip: string | undefined;
  beforeAll(async () => {
    skip = await postgresSkipReason();
    if (skip !== undefined) return;
    await withPostgresClient(
      (client) => client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`),
      url,
    );
  });
  afterAll(async () => {
    if (skip !== undefined) return;
    await withPostgresClient(
      (client) => client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`),
      url,
    );
  });
  return () => skip;
}

/**
 * PostgreSQL's generic plan of each statement (planned for any values, as a prepared statement
 * the engine runs is after a few runs), from auto_explain in a transaction rolled back.
 */
export async function genericPlans(
  statements: readonly Statement[],
  url: string,
): Promise<string[]> {
  return withPostgresClient(async (client) => {
    const notices: string[] = [];
    client.on('notice', (notice) => notices.push(notice.message ?? ''));
    await client.query("LOAD 'auto_explain'");
    await client.query('SET auto_explain.log_min_duration = 0');
    await client.query("SET auto_explain.log_level = 'notice'");
    const connection = new PostgresConnection(client);
    const plans: string[] = [];
    for (const { sql, params } of statements) {
      await connection.begin('durable');
      await connection.query('SELECT 1');
      notices.length = 0;
      await connection.query(sql, params);
      // A bound statement's plan is logged as its portal closes, by the next message.
      await connection.rollback();
      plans.push(notices.join('\n'));
    }
    return plans;
  }, url);
}
