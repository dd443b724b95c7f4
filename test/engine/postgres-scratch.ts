import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { openEngine } from '../../src/engine/index.js';
import type { EngineFactory } from '../conformance/engines.js';
import { POSTGRES_URL, postgresSkipReason, withPostgresClient } from '../crash/postgres.js';
import { temporaryDirectory } from '../temporary-directory.js';

/** A database of a test's own, which it may turn read-only or give settings; dropped after. */
export interface ScratchDatabase {
  readonly name: string;
  /** Its URL, with `params` (e.g. `options=-c statement_timeout=100`) when given. */
  url(params?: Record<string, string>): string;
  /** Ends every connection to it (they are all this test's). */
  terminate(): Promise<void>;
  /** An SQL statement (as `ALTER DATABASE`), run from the tests' database. */
  admin(sql: string): Promise<void>;
  drop(): Promise<void>;
}

/** Creates an empty database next to the tests' one (`label` shows in its name). */
export async function scratchDatabase(label: string): Promise<ScratchDatabase> {
  const random = Math.floor(Math.random() * 36 ** 6).toString(36);
  const name = `leaseq_${label}_${process.pid}_${random}`;
  await withPostgresClient((client) => client.query(`CREATE DATABASE ${name}`));
  const url = (params: Record<string, string> = {}) => {
    const parsed = new URL(POSTGRES_URL);
    parsed.pathname = `/${name}`;
    for (const [key, value] of Object.entries(params)) parsed.searchParams.set(key, value);
    return parsed.toString();
  };
  const terminate = async () => {
    await withPostgresClient((client) =>
      client.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [name],
      ),
    );
  };
  return {
    name,
    url,
    terminate,
    admin: async (sql) => {
      await withPostgresClient((client) => client.query(sql));
    },
    drop: async () => {
      // Refused new connections first: an engine a failed test left open reconnects at once
      // (its pool, its listener), and DROP DATABASE refuses a database anyone is connected to.
      await withPostgresClient(async (client) => {
        const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [
          name,
        ]);
        if (rowCount !== 0) await client.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      });
      await terminate();
      await withPostgresClient((client) => client.query(`DROP DATABASE IF EXISTS ${name}`));
    },
  };
}

/**
 * For one test file (call at its top): `make` creates databases of the file's own (see
 * scratchDatabase), all dropped after its tests; `skip()` is why PostgreSQL does not run
 * (unreachable outside CI), undefined when it does.
 */
export function scratchDatabasesOfFile(label: string): {
  skip(): string | undefined;
  make(): Promise<ScratchDatabase>;
} {
  let skip: string | undefined;
  const made: ScratchDatabase[] = [];
  beforeAll(async () => {
    skip = await postgresSkipReason();
  });
  afterAll(async () => {
    for (const scratch of made.splice(0)) await scratch.drop();
  });
  return {
    skip: () => skip,
    make: async () => {
      const scratch = await scratchDatabase(label);
      made.push(scratch);
      return scratch;
    },
  };
}

/** A storage a test file runs on: its name, and its URL once the file's setup made it. */
export interface StorageTarget {
  name: 'sqlite' | 'postgres';
  url(): string;
}

/**
 * For one test file (call at its top): a SQLite file and a PostgreSQL database of its own (see
 * scratchDatabase), made before its tests and removed after them; `postgresSkip()` is why
 * PostgreSQL does not run (unreachable outside CI), undefined when it does.
 */
export function sqliteAndScratchPostgres(label: string): {
  targets: StorageTarget[];
  postgresSkip(): string | undefined;
} {
  const directory = temporaryDirectory(`leaseq-${label.replaceAll('_', '-')}-`);
  let scratch: ScratchDatabase | undefined;
  let skip: string | undefined;
  beforeAll(async () => {
    skip = await postgresSkipReason();
    if (skip === undefined) scratch = await scratchDatabase(label);
  });
  afterAll(async () => {
    await scratch?.drop();
  });
  return {
    targets: [
      { name: 'sqlite', url: () => `sqlite:${join(directory, 'q.db')}` },
      { name: 'postgres', url: () => (scratch as ScratchDatabase).url() },
    ],
    postgresSkip: () => skip,
  };
}

/**
 * `factory`, or for PostgreSQL a database of the test file's own (see scratchDatabase), made at
 * the first open and dropped at cleanup. For tests whose calls read the whole storage (a
 * scheduler pass lists every queue's schedules): in the database that other test files and runs
 * share, they would meet those files' queues, and those files theirs.
 */
export function inOwnPostgresDatabase(factory: EngineFactory, label: string): EngineFactory {
  if (factory.name !== 'postgres') return factory;
  let scratch: Promise<ScratchDatabase> | undefined;
  return {
    name: 'postgres',
    open: async () => {
      scratch ??= scratchDatabase(label);
      return openEngine((await scratch).url());
    },
    cleanup: async () => {
      const made = await scratch?.catch(() => undefined);
      scratch = undefined;
      await made?.drop();
    },
  };
}
