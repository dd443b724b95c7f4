import pg from 'pg';
import { LeaseqError, StorageLockedError, StorageUnavailableError } from '../../core/index.js';
import type { Engine } from '../engine.js';
import {
  checkClockMode,
  checkEngineOptions,
  type EngineOptions,
  redactUrl,
} from '../engine-options.js';
import { loadMigrations, migrate } from '../sql/migrate.js';
import type { SqlDialect } from '../sql/sql-connection.js';
import { SqlEngine } from '../sql/sql-engine.js';
import { fenceTokens, POSTGRES_ONE_STATEMENT } from './one-statement.js';
import { PostgresConnection } from './postgres-connection.js';

const WAKE_CHANNEL = 'leaseq_wake';

export const POSTGRES_DIALECT: SqlDialect = {
  // The queue row lock serializes a queue's reservations and general transactions across
  // processes and machines, so two consumers can never take the same job (and tokens stay a
  // gap-free counter, R6). Acks do without it (migration 0013 says how).
  lockRow: ' FOR UPDATE',
  loadQueueRow: (columns) => `SELECT ${columns} FROM leaseq_load_queue(?)`,
  lockQueueName: 'SELECT pg_advisory_xact_lock(744503, hashtext(?))',
  lockDeadLetterChains: 'SELECT pg_advisory_xact_lock(744504)',
  oneStatement: POSTGRES_ONE_STATEMENT,
  fenceTokens,
  setBased: true,
  jobsByToken: 'leaseq_jobs',
  // The first entry of the queue's range of leaseq_jobs_ready_since (0020), written as the
  // first row in that order rather than a MIN: planned for any values from statistics that know
  // no job of the queue, a MIN reads every entry of the range. Every ready job has a ready_since.
  oldestReady: `SELECT ready_since AS since FROM leaseq_jobs WHERE queue = ? AND state = 'ready'
    ORDER BY ready_since LIMIT 1`,
  wakeStatement: (queue) => ({ sql: 'SELECT pg_notify(?, ?)', params: [WAKE_CHANNEL, queue] }),
  migrationLock: 'SELECT pg_advisory_xact_lock(744501)',
  jsonList: (type) =>
    `(SELECT value::${type === 'text' ? 'text' : 'bigint'} FROM json_array_elements_text(?::json) AS value)`,
  jsonRecords: (columns) =>
    `(SELECT * FROM json_to_recordset(?::json) AS r(${columns
      .map(([name, type]) => `${name} ${type === 'text' ? 'text' : 'bigint'}`)
      .join(', ')}))`,
};

/** bigint columns as JS numbers: every stored integer is a safe integer (R1). */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

/**
 * TCP keepalive probes on every connection after 10 s of silence. The wake-up listener's
 * connection is idle for as long as nothing is published, and a NAT or load balancer between a
 * node and the database drops idle connections without a word (after 350 s on AWS): the probes
 * keep it open, and a database host that is gone is noticed rather than waited on for ever.
 */
const KEEPALIVE = { keepAlive: true, keepAliveInitialDelayMillis: 10_000 } as const;

/**
 * Opens a PostgreSQL database shared by any number of processes and machines. Time comes from
 * the database's clock (`storageTime`), so nodes with skewed clocks agree.
 */
export async function openPostgresEngine(
  url: string,
  options: EngineOptions = {},
): Promise<Engine> {
  checkEngineOptions(options);
  const target = redactUrl(url);
  const pool = new pg.Pool({
    connectionString: url,
    types,
    max: 4,
    connectionTimeoutMillis: 5000,
    ...KEEPALIVE,
  });
  pool.on('error', () => undefined); // an idle client's failure surfaces on its next use
  // Every client listens for its connection's death from the moment it connects: the pool stops
  // listening to a client it hands out, and a connection that dies then (PostgreSQL restarted,
  // the backend terminated, in the very read that finished connecting) must fail that client's
  // next statement, not the process with an unhandled 'error'. The broken client is dropped on
  // release.
  const broken = new WeakMap<pg.ClientBase, Error>();
  pool.on('connect', (client) => {
    client.on('error', (error: Error) => {
      broken.set(client, error);
    });
  });
  let listener: WakeListener | undefined;
  // Clients that ran the after-crash check (it must come before a client's first transaction).
  const checked = new WeakSet<pg.PoolClient>();
  try {
    const client = await connect(pool, target);
    try {
      const connection = new PostgresConnection(client);
      await migrate(
        connection,
        POSTGRES_DIALECT,
        await loadMigrations(new URL('./migrations/', import.meta.url)),
        target,
      );
    } catch (error) {
      // A connection lost while migrating: the storage is unavailable, as for any call.
      throw isConnectionFailure(error) || broken.has(client) ? unavailable(error, target) : error;
    } finally {
      client.release(broken.get(client));
    }
    const engine: SqlEngine = new SqlEngine({
      target,
      capabilities: { durable: true, shared: true, transactions: true, crossProcessWakeups: true },
      dialect: POSTGRES_DIALECT,
      followClock: checkClockMode(options.clockMode) === 'follow',
      storageTime: async () => {
        const result = await pool.query<{ ms: string }>(
          'SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint AS ms',
        );
        return Number(result.rows[0]?.ms);
      },
      translateError: (error) => {
        if (isConnectionFailure(error)) return unavailable(error, target);
        return isLostRace(error) ? lockedOut(error, target) : error;
      },
      retryable: isLostRace,
      beforeWait: () => listener?.ensure(),
      acquire: async () => {
        const pooled = await connect(pool, target);
        if (!checked.has(pooled)) {
          try {
            await pooled.query('SELECT leaseq_continue_after_crash()');
          } catch (error) {
            pooled.release(error as Error);
            throw isConnectionFailure(error) ? unavailable(error, target) : error;
          }
          checked.add(pooled);
        }
        return {
          connection: new PostgresConnection(pooled),
          release: () => pooled.release(broken.get(pooled)),
        };
      },
      shutdown: async () => {
        await listener?.close();
        await pool.end();
      },
    });
    listener = new WakeListener(url, target, (queue) => engine.wakes.wake(queue));
    await listener.open();
    return engine;
  } catch (error) {
    await listener?.close();
    await pool.end().catch(() => undefined);
    throw error;
  }
}

async function connect(pool: pg.Pool, target: string): Promise<pg.PoolClient> {
  try {
    return await pool.connect();
  } catch (error) {
    throw unavailable(error, target);
  }
}

/**
 * A dedicated connection that hears other processes' wake-ups (LISTEN/NOTIFY). Lost (PostgreSQL
 * restarted, the backend ended), it is opened again when a receiver next waits: the engine sets
 * no timer of its own, and a receiver that waits meanwhile sees the jobs when its wait ends.
 */
class WakeListener {
  private client: pg.Client | undefined;
  private opening: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly target: string,
    private readonly wake: (queue: string) => void,
  ) {}

  async open(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, types, ...KEEPALIVE });
    client.on('error', () => undefined);
    client.on('end', () => {
      if (this.client === client) this.client = undefined;
    });
    client.on('notification', (message) => {
      if (message.channel === WAKE_CHANNEL && message.payload) this.wake(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${WAKE_CHANNEL}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw unavailable(error, this.target);
    }
    if (this.closed) await client.end().catch(() => undefined);
    else this.client = client;
  }

  /** Opens the connection again if it was lost; a failure is tried again at the next call. */
  ensure(): void {
    if (this.closed || this.client !== undefined || this.opening !== undefined) return;
    this.opening = this.open()
      .catch(() => undefined)
      .finally(() => {
        this.opening = undefined;
      });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.opening;
    await this.client?.end().catch(() => undefined);
    this.client = undefined;
  }
}

function unavailable(error: unknown, target: string): Error {
  if (error instanceof LeaseqError) return error;
  const message = (error as Error).message ?? String(error);
  return new StorageUnavailableError(`${target} cannot be reached: ${message}`, { cause: error });
}

/**
 * A deadlock (or a serialization failure): PostgreSQL rolled this transaction back so that
 * another one holding locks it needed could go on. The same work may succeed if run again.
 */
function isLostRace(error: unknown): boolean {
  const code = String((error as { code?: unknown } | null)?.code ?? '');
  return code === '40P01' || code === '40001';
}

function lockedOut(error: unknown, target: string): Error {
  const message = (error as Error).message ?? String(error);
  return new StorageLockedError(
    `${target}: the transaction was rolled back, waiting for locks another transaction held (${message}); run it again`,
    { cause: error },
  );
}

/** Errors that say the database cannot be used, as opposed to a statement's own failure. */
function isConnectionFailure(error: unknown): boolean {
  const code = String((error as { code?: unknown }).code ?? '');
  const message = (error as Error).message ?? '';
  return (
    /^(ECONN|ENOTFOUND|ETIMEDOUT|EHOSTUNREACH|EPIPE)/.test(code) ||
    /^(08|28|3D|53|57P)/.test(code) ||
    /Connection terminated|is not queryable|timeout exceeded when trying to connect/i.test(message)
  );
}
