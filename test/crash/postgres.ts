import pg from 'pg';
import { StorageUnavailableError } from '../../src/core/index.js';
import { openEngine, redactUrl } from '../../src/engine/index.js';

/** The PostgreSQL the crash tests use: LEASEQ_TEST_POSTGRES_URL, or the local default. */
export const POSTGRES_URL =
  process.env.LEASEQ_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
]);

/**
 * Why the PostgreSQL tests cannot run, or undefined when they can. PostgreSQL being unreachable
 * is a reason to skip only outside CI: under CI=true it throws, and the test fails. Any other
 * failure to open throws too.
 */
export async function postgresSkipReason(): Promise<string | undefined> {
  try {
    const engine = await openEngine(POSTGRES_URL);
    await engine.close();
    return undefined;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    const unreachable =
      error instanceof StorageUnavailableError ||
      (typeof code === 'string' && NETWORK_CODES.has(code));
    if (process.env.CI === 'true' || !unreachable) throw error;
    const message = error instanceof Error ? error.message : String(error);
    return `PostgreSQL unreachable at ${redactUrl(POSTGRES_URL)} (${message}); set LEASEQ_TEST_POSTGRES_URL, or CI=true to make this a failure`;
  }
}

/** Runs `work` on a client of its own at `url` (by default the tests' database), ended after. */
export async function withPostgresClient<T>(
  work: (client: pg.Client) => Promise<T>,
  url = POSTGRES_URL,
): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The backends of engines opened with `application_name=app` that listen for wake-ups. */
export async function listeningBackends(app: string): Promise<number[]> {
  return withPostgresClient(async (client) => {
    const { rows } = await client.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN %'`,
      [app],
    );
    return rows.map((row) => row.pid);
  });
}

/** A queue name no other run uses (the database is shared); the test deletes it at the end. */
export function uniqueQueueName(label: string): string {
  const random = Math.floor(Math.random() * 36 ** 6).toString(36);
  return `crash-${label}-${process.pid.toString(36)}-${Date.now().toString(36)}-${random}`;
}

/** Deletes the queue (and its jobs) if it exists; reports nothing when PostgreSQL is gone. */
export async function deleteQueue(name: string): Promise<void> {
  const engine = await openEngine(POSTGRES_URL);
  try {
    await engine.deleteQueue(name);
  } finally {
    await engine.close();
  }
}
