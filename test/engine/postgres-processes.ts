import pg from 'pg';
import { afterEach, beforeAll } from 'vitest';
import { type Engine, type EngineOptions, openEngine } from '../../src/engine/index.js';
import { POSTGRES_URL, postgresSkipReason } from '../crash/postgres.js';

/**
 * Engines over one PostgreSQL database, each standing for another process (its own pool of
 * connections), and plain clients beside them, as the tests of calls that meet on the same
 * queues use them: closed after each test, with the queues named in `names` deleted.
 */
export interface PostgresProcesses {
  /** Why PostgreSQL tests are skipped here, once the suite has begun; undefined: they run. */
  readonly skip: string | undefined;
  /** Queues a test made: deleted after it. */
  readonly names: string[];
  /** Another process's engine. */
  engine(): Promise<Engine>;
  /** A plain client of the database. */
  client(): Promise<pg.Client>;
  /**
   * Holds the advisory locks of `queues` (as a transaction of theirs takes them) in a plain
   * client's transaction, until the returned release.
   */
  holdQueues(queues: readonly string[]): Promise<() => Promise<void>>;
}

/** Registers the hooks of a suite of PostgreSQL processes; `options`: each engine's. */
export function postgresProcesses(options: EngineOptions = {}): PostgresProcesses {
  let skip: string | undefined;
  const engines: Engine[] = [];
  const clients: pg.Client[] = [];
  const names: string[] = [];
  beforeAll(async () => {
    skip = await postgresSkipReason();
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.end().catch(() => undefined);
    const [first] = engines;
    for (const name of names.splice(0)) await first?.deleteQueue(name);
    await Promise.all(engines.splice(0).map((engine) => engine.close()));
  });
  const client = async () => {
    const opened = new pg.Client({ connectionString: POSTGRES_URL });
    await opened.connect();
    clients.push(opened);
    return opened;
  };
  return {
    get skip() {
      return skip;
    },
    names,
    async engine() {
      const opened = await openEngine(POSTGRES_URL, options);
      engines.push(opened);
      return opened;
    },
    client,
    async holdQueues(queues) {
      const holder = await client();
      await holder.query('BEGIN');
      for (const name of queues) {
        await holder.query('SELECT pg_advisory_xact_lock(744503, hashtext($1))', [name]);
      }
      return async () => {
        await holder.query('COMMIT');
      };
    },
  };
}

/** Resolves once `count` backends of this database wait for a lock. */
export async function lockWaiters(observer: pg.Client, count: number): Promise<void> {
  for (;;) {
    const { rows } = await observer.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if (Number(rows[0]?.n) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * How many statements of this process naming one of `queues` PostgreSQL rolled back for a
 * deadlock while `action` ran.
 */
export async function deadlocksDuring(
  queues: readonly string[],
  action: () => Promise<unknown>,
): Promise<number> {
  let deadlocks = 0;
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const result = (original as (...a: unknown[]) => unknown).apply(this, args);
    // Values, or literals where the first statement of a transaction is sent with its BEGIN.
    const values = Array.isArray(args[1]) ? (args[1] as unknown[]) : [];
    const text = typeof args[0] === 'string' ? args[0] : '';
    const names = (name: string) =>
      values.some((value) => typeof value === 'string' && value.includes(name)) ||
      text.includes(name);
    if (result instanceof Promise && queues.some(names)) {
      result.catch((error: unknown) => {
        if ((error as { code?: unknown } | null)?.code === '40P01') deadlocks += 1;
      });
    }
    return result;
  } as typeof original;
  try {
    await action();
  } finally {
    pg.Client.prototype.query = original;
  }
  return deadlocks;
}
