import { POSTGRES_URL, withPostgresClient } from '../crash/postgres.js';

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
      await terminate();
      await withPostgresClient((client) => client.query(`DROP DATABASE IF EXISTS ${name}`));
    },
  };
}
