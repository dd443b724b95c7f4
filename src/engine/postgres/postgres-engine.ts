import { randomUUID } from 'node:crypto';
import pg from 'pg';
import {
  ConflictError,
  LeaseqError,
  StorageLockedError,
  StorageUnavailableError,
} from '../../core/index.js';
import type { Engine } from '../engine.js';
import {
  checkClockMode,
  checkEngineOptions,
  type EngineOptions,
  redactUrl,
} from '../engine-options.js';
import { failureText } from '../failure-text.js';
import { loadMigrations, migrate } from '../sql/migrate.js';
import type { SqlDialect } from '../sql/sql-connection.js';
import { SqlEngine } from '../sql/sql-engine.js';
import { fenceTokens, POSTGRES_ONE_STATEMENT } from './one-statement.js';
import {
  type Isolation,
  isAborted,
  isRefusedUnsent,
  PostgresConnection,
  SESSION_SETUP,
  sessionBackend,
  sessionIsolation,
} from './postgres-connection.js';

const WAKE_CHANNEL = 'leaseq_wake';
/** The channel of the check at open that the listener hears what other connections notify. */
const HEARING_CHANNEL = 'leaseq_hearing';

export const POSTGRES_DIALECT: SqlDialect = {
  // The queue row lock serializes a queue's reservations and general transactions across
  // processes and machines, so two consumers can never take the same job (and tokens stay a
  // gap-free counter, R6). Acks do without it (migration 0013 says how).
  lockRow: ' FOR UPDATE',
  skipLocked: ' FOR UPDATE SKIP LOCKED',
  loadQueueRow: (columns) => `SELECT ${columns} FROM leaseq_load_queue(?)`,
  lockQueueName: 'SELECT pg_advisory_xact_lock(744503, hashtext(?))',
  lockDeadLetterChains: 'SELECT pg_advisory_xact_lock(744504)',
  // UNION, not UNION ALL: a loop read half-way (R26) ends where a row comes round again.
  deadLetterChains: (names) => `WITH RECURSIVE chain (name, options) AS (
      SELECT name, options FROM leaseq_queues WHERE name IN ${names}
      UNION
      SELECT q.name, q.options FROM chain AS c
      JOIN leaseq_queues AS q ON q.name = c.options::jsonb ->> 'deadLetterQueue')
    SELECT name, options FROM chain`,
  oneStatement: POSTGRES_ONE_STATEMENT,
  fenceTokens,
  durableCommit: "SELECT set_config('synchronous_commit', 'on', true)",
  setBased: true,
  jobsByToken: 'leaseq_jobs',
  // The first entry of the queue's range of leaseq_jobs_ready_since (0020), written as the
  // first row in that order rather than a MIN: planned for any values from statistics that know
  // no job of the queue, a MIN reads every entry of the range. Every ready job has a ready_since.
  oldestReadyOf: (queue) => `SELECT ready_since AS since FROM leaseq_jobs
    WHERE queue = ${queue} AND state = 'ready' ORDER BY ready_since LIMIT 1`,
  readQueueRows: (columns, names) => `SELECT ${columns
    .split(', ')
    .map((column) => TALLIED_COLUMNS[column] ?? `q.${column}`)
    .join(', ')}
    FROM leaseq_queues AS q LEFT JOIN LATERAL (
      SELECT SUM(active) AS active, SUM(acks) AS acks, SUM(stale_acks) AS stale_acks,
        SUM(time_count) AS time_count, SUM(time_sum) AS time_sum, MAX(time_max) AS time_max,
        MAX(clock) AS clock
      FROM leaseq_tallies WHERE queue = q.name) AS s ON TRUE
    WHERE q.name IN ${names}`,
  // A queue's time is its row's clock or a later one its one-statement acks tallied apart.
  recordedClock: `SELECT MAX(clock) AS clock FROM (SELECT GREATEST(q.clock,
      (SELECT MAX(t.clock) FROM leaseq_tallies AS t WHERE t.queue = q.name)) AS clock
    FROM leaseq_queues AS q) AS c WHERE clock <= ?`,
  wakeStatement: (queue) => ({ sql: 'SELECT pg_notify(?, ?)', params: [WAKE_CHANNEL, queue] }),
  // Read committed whatever the database's default_transaction_isolation: under repeatable read
  // or serializable the snapshot is taken by the wait for the lock, and a process that waited
  // for another's migration would not see the versions it recorded, and apply them again.
  migrationLock:
    'SET TRANSACTION ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock(744501)',
  jsonList,
  // The elements as one array, compared through the index: `IN` a list is planned as a join,
  // which statistics that know few jobs of the queue (none gathered since a backlog came) make
  // one of every job of the queue with the list. A publish's check for duplicates at a backlog
  // of 20,000 read them all (4.5 ms a statement, 18 the first time, against 0.1 with this), an
  // ack on the general path every active job.
  inJsonList: (column, type) => `${column} = ANY(ARRAY${jsonList(type)})`,
  jsonRecords: (columns) =>
    `(SELECT * FROM json_to_recordset(?::json) AS r(${columns
      .map(([name, type]) => `${name} ${type === 'text' ? 'text' : 'bigint'}`)
      .join(', ')}))`,
};

function jsonList(type: 'text' | 'integer'): string {
  return `(SELECT value::${type === 'text' ? 'text' : 'bigint'} FROM json_array_elements_text(?::json) AS value)`;
}

/**
 * The queue row's columns that the one-statement acks tally apart (leaseq_tallies), as
 * leaseq_load_queue folds them in, over the sums `s` of the queue's tallies (null: none).
 */
const TALLIED_COLUMNS: Record<string, string> = {
  clock: 'GREATEST(q.clock, s.clock) AS clock',
  active_count: '(q.active_count + COALESCE(s.active, 0))::bigint AS active_count',
  counters: `CASE WHEN s.clock IS NULL THEN q.counters ELSE leaseq_add_counters(q.counters,
    jsonb_build_object('acks', s.acks, 'staleAcks', s.stale_acks, 'processingTime',
    jsonb_build_object('count', s.time_count, 'sum', s.time_sum)), s.time_max) END AS counters`,
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

/** How long a new connection may take to be ready (the pool's, the listener's, and its LISTEN). */
const CONNECT_TIMEOUT_MS = 5000;

/**
 * A session refused a write (25006) is kept if it began less than this long ago (ms): it reached
 * the database as it is now, and a new one would be refused too. Replaced at once, a standby
 * taking writes made PostgreSQL start a backend for each (every call waiting for one: 45 ms a
 * write instead of 1.4, reads slowed as much); so a pool's session is replaced at most once a
 * second, and writes resume within a second of the database taking them.
 */
const READ_ONLY_SESSION_KEPT_MS = 1000;

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
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    ...KEEPALIVE,
  });
  pool.on('error', () => undefined); // an idle client's failure surfaces on its next use
  // Every client listens for its connection's death from the moment it connects: the pool stops
  // listening to a client it hands out, and a connection that dies then (PostgreSQL restarted,
  // the backend terminated, in the very read that finished connecting) must fail that client's
  // next statement, not the process with an unhandled 'error'. The broken client is dropped on
  // release.
  const broken = new WeakMap<pg.ClientBase, Error>();
  // When each client's session began (performance.now()), for retiresConnection.
  const began = new WeakMap<pg.ClientBase, number>();
  pool.on('connect', (client) => {
    began.set(client, performance.now());
    client.on('error', (error: Error) => {
      // The first says why (PostgreSQL's FATAL); the socket's close that follows does not.
      if (!broken.has(client)) broken.set(client, error);
    });
  });
  let listener: WakeListener | undefined;
  // Clients that ran SESSION_SETUP (with the after-crash check, it must come before a client's
  // first transaction), with the database's default isolation it read for callers' transactions.
  const checked = new WeakMap<pg.PoolClient, Isolation | undefined>();
  // Clients handed out for a transaction, whose connections a close that cannot wait cuts.
  const inUse = new Set<pg.PoolClient>();
  // The server processes of the pool's sessions (from SESSION_SETUP): a wake-up one of them
  // notified is this engine's own, told here already when its transaction committed.
  const backends = new WeakMap<pg.ClientBase, number>();
  const ownBackends = new Set<number>();
  // Every waiting receive looks (set once the engine is made).
  let wakeWaiting: (() => void) | undefined;
  pool.on('remove', (client) => {
    const backend = backends.get(client);
    if (backend !== undefined) ownBackends.delete(backend);
    // Lost under a commit whose outcome is unknown, a transaction may have made jobs ready
    // and told no one here: its own notification is not heard (above), and it was answered
    // with an error, not committed.
    if (broken.has(client)) wakeWaiting?.();
  });
  // Queries the driver refused because their connection had failed: that failure, as the reason.
  const refusedFor = new WeakMap<object, Error>();
  try {
    const client = await connect(pool, target);
    try {
      const connection = new PostgresConnection(client, target);
      await migrate(
        connection,
        POSTGRES_DIALECT,
        await loadMigrations(new URL('./migrations/', import.meta.url)),
        target,
        (error) => (broken.has(client) ? unavailable(error, target) : translate(error, target)),
      );
    } catch (error) {
      // A connection lost, a database that takes no writes or timed the migration out: typed,
      // as for any call.
      throw broken.has(client) ? unavailable(error, target) : translate(error, target);
    } finally {
      client.release(broken.get(client));
    }
    const engine: SqlEngine = new SqlEngine({
      target,
      capabilities: { durable: true, shared: true, transactions: true, crossProcessWakeups: true },
      dialect: POSTGRES_DIALECT,
      followClock: checkClockMode(options.clockMode) === 'follow',
      // Typed as any call's failure: the database unreachable is StorageUnavailableError.
      storageTime: async () => {
        const client = await connect(pool, target);
        let failure: Error | undefined;
        try {
          const result = await client.query<{ ms: string }>(
            'SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint AS ms',
          );
          return Number(result.rows[0]?.ms);
        } catch (error) {
          if (retiresConnection(error, began.get(client))) failure = error as Error;
          throw translate(error, target);
        } finally {
          client.release(failure ?? broken.get(client));
        }
      },
      translateError: (error) =>
        schemaGone(error, target) ?? translate(refusedFor.get(error as object) ?? error, target),
      retryable: isLostRace,
      beforeWait: () => listener?.ensure(),
      acquire: async () => {
        const pooled = await connect(pool, target);
        // In use from here: the check may wait for a lock too, and a close that cannot wait cuts it.
        inUse.add(pooled);
        if (!checked.has(pooled)) {
          try {
            const setup = await pooled.query(SESSION_SETUP);
            checked.set(pooled, sessionIsolation(setup));
            const backend = sessionBackend(setup);
            if (backend !== undefined) {
              backends.set(pooled, backend);
              ownBackends.add(backend);
            }
          } catch (error) {
            inUse.delete(pooled);
            pooled.release(error as Error);
            throw isConnectionFailure(error) ? unavailable(error, target) : error;
          }
        }
        return {
          // A failure that ends the backend (terminated, the server shutting down) comes before
          // the socket's close: released before it, the client would go back to the pool as
          // sound, and the next call, run at once, would fail on it too.
          connection: new PostgresConnection(
            pooled,
            target,
            (error) => {
              if (retiresConnection(error, began.get(pooled)) && !broken.has(pooled)) {
                broken.set(pooled, error as Error);
              }
              // Refused unsent, the connection having failed while idle (PostgreSQL ended the
              // session: idle_in_transaction_session_timeout, terminated): that failure says why.
              const reason = broken.get(pooled);
              if (isRefusedUnsent(error) && reason !== undefined && reason !== error) {
                refusedFor.set(error as object, reason);
              }
            },
            checked.get(pooled),
          ),
          release: () => {
            inUse.delete(pooled);
            pooled.release(broken.get(pooled));
          },
        };
      },
      shutdown: async () => {
        await listener?.close();
        await pool.end();
      },
      // The server rolls back the transaction of a connection that ends; the client's statement
      // fails at once, and the client, broken, is dropped on release.
      abandon: () => {
        for (const client of inUse) (client as unknown as pg.Client).connection.stream.destroy();
      },
    });
    wakeWaiting = () => engine.wakeWaiting();
    listener = new WakeListener(url, target, {
      wake: (queue, backend) => {
        if (!ownBackends.has(backend)) engine.wakes.wake(queue);
      },
      receiversWaiting: () => engine.receiversWaiting,
      reopened: () => engine.wakeWaiting(),
    });
    await listener.open();
    await listener.checkHearing(pool);
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

/** What the wake listener tells the engine, and asks it. */
interface WakeListenerHooks {
  /**
   * A commit may have made jobs of `queue` ready; `backend` is the server process of the session
   * that notified it (another process's, or this engine's own).
   */
  wake(queue: string, backend: number): void;
  receiversWaiting(): boolean;
  /** Heard again after a loss: what was notified meanwhile was missed. */
  reopened(): void;
}

/** The first wait before opening a lost listener again (ms), doubled per failure up to the last. */
const REOPEN_FIRST_MS = 100;
const REOPEN_MOST_MS = 5000;

/**
 * A dedicated connection that hears other processes' wake-ups (LISTEN/NOTIFY). Lost (PostgreSQL
 * restarted, the backend ended), it is opened again at once while receivers wait (then after a
 * backoff while that fails), else when a receiver next waits; once it is open again, every
 * waiting receiver looks, since what was notified meanwhile was missed. An
 * attempt to open it is bounded (connecting, then its LISTEN): one that hangs (a link that
 * accepts connections and never answers) fails rather than keep every later receiver from
 * opening it, and one that fails while other receivers began to wait is made again for them.
 */
class WakeListener {
  private client: pg.Client | undefined;
  private opening: Promise<void> | undefined;
  /** The client of the attempt under way, ended at once if the engine closes meanwhile. */
  private connecting: pg.Client | undefined;
  /** A receiver began to wait while the attempt under way was made. */
  private askedAgain = false;
  private closed = false;
  /** It was open once and lost since: the next open is owed a look by every waiting receiver. */
  private lost = false;
  private reopenTimer: NodeJS.Timeout | undefined;
  private reopenDelay = REOPEN_FIRST_MS;
  /** No attempt before this (performance.now()): set by a loss or a failed attempt. */
  private retryAt = 0;
  /** What to call when the check of that name (checkHearing) is heard. */
  private readonly heard = new Map<string, () => void>();

  constructor(
    private readonly url: string,
    private readonly target: string,
    private readonly hooks: WakeListenerHooks,
  ) {}

  async open(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.url,
      types,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      // Only its LISTEN is a query: a notification is no answer to one.
      query_timeout: CONNECT_TIMEOUT_MS,
      ...KEEPALIVE,
    });
    client.on('error', () => undefined);
    client.on('end', () => {
      if (this.client !== client) return;
      this.client = undefined;
      this.lost = true;
      this.retryAt = performance.now() + this.reopenDelay;
      if (this.hooks.receiversWaiting()) this.reopenLater();
    });
    client.on('notification', (message) => {
      if (message.channel === WAKE_CHANNEL && message.payload) {
        this.hooks.wake(message.payload, message.processId);
      }
      if (message.channel === HEARING_CHANNEL) this.heard.get(message.payload ?? '')?.();
    });
    this.connecting = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${WAKE_CHANNEL}; LISTEN ${HEARING_CHANNEL}`);
    } catch (error) {
      // Not end(): its goodbye waits for the server to close, which a hung link never does.
      client.connection.stream.destroy();
      throw unavailable(error, this.target);
    } finally {
      this.connecting = undefined;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.reopenDelay = REOPEN_FIRST_MS;
    this.retryAt = 0;
    if (this.lost) {
      this.lost = false;
      this.hooks.reopened();
    }
  }

  /**
   * Sends a NOTIFY through a connection of the pool and waits up to CONNECT_TIMEOUT_MS for the
   * listener to hear it. A pooler that hands each transaction a server connection of its own
   * (PgBouncer's pool_mode = transaction or statement) keeps the LISTEN on none of them: the
   * listener would hear no other process's publish, and its receivers would wait out their
   * waits. Such a pooler keeps no prepared statement or session setting either, which the
   * engine's connections rely on: refused at open, naming it.
   */
  async checkHearing(pool: pg.Pool): Promise<void> {
    const name = randomUUID();
    let heard!: (yes: boolean) => void;
    const hearing = new Promise<boolean>((resolve) => {
      heard = resolve;
    });
    this.heard.set(name, () => heard(true));
    let timer: NodeJS.Timeout | undefined;
    try {
      const client = await connect(pool, this.target);
      let failure: Error | undefined;
      try {
        await client.query('SELECT pg_notify($1, $2)', [HEARING_CHANNEL, name]);
      } catch (error) {
        failure = error as Error;
        throw translate(error, this.target);
      } finally {
        client.release(failure);
      }
      // From its commit: the wait for a connection (a busy pool in session mode) is not counted.
      // Decided after the loop's next read of the sockets, so that a loop blocked past the
      // timeout reads a notification that arrived meanwhile first.
      timer = setTimeout(() => setImmediate(() => heard(false)), CONNECT_TIMEOUT_MS);
      if (!(await hearing)) {
        if (this.client === undefined) {
          throw new StorageUnavailableError(
            `${this.target} cannot be reached: the wake-up listener's connection ended as it opened`,
          );
        }
        throw new StorageUnavailableError(
          `${this.target} does not carry leaseq's LISTEN: a NOTIFY sent through another connection was not heard within ${CONNECT_TIMEOUT_MS / 1000} s. A connection pooler in transaction or statement mode (PgBouncer's pool_mode = transaction) keeps no session's LISTEN, prepared statements or settings, which leaseq needs: connect leaseq to PostgreSQL directly or through a pooler in session mode`,
        );
      }
    } finally {
      clearTimeout(timer);
      this.heard.delete(name);
    }
  }

  /** Opens it again once the backoff is over, while receivers wait and it is still lost. */
  private reopenLater(): void {
    if (this.closed || this.reopenTimer !== undefined) return;
    this.reopenTimer = setTimeout(
      () => {
        this.reopenTimer = undefined;
        if (this.closed || this.client !== undefined || !this.hooks.receiversWaiting()) return;
        this.ensure();
      },
      Math.max(0, this.retryAt - performance.now()),
    );
    // A process with nothing else to do does not stay for it.
    this.reopenTimer.unref();
  }

  /**
   * Opens the connection again if it was lost, once the backoff since the loss or the last
   * failed attempt is over (then by a timer, while receivers wait): receivers that begin to wait
   * meanwhile make no attempt of their own.
   */
  ensure(): void {
    if (this.closed || this.client !== undefined) return;
    if (this.opening !== undefined) {
      this.askedAgain = true;
      return;
    }
    // Within the backoff (every receiver that begins to wait asks): the timer opens it.
    if (performance.now() < this.retryAt) {
      this.reopenLater();
      return;
    }
    this.askedAgain = false;
    this.opening = this.open().then(
      () => {
        this.opening = undefined;
      },
      () => {
        this.opening = undefined;
        this.retryAt = performance.now() + this.reopenDelay;
        this.reopenDelay = Math.min(REOPEN_MOST_MS, this.reopenDelay * 2);
        if (this.askedAgain || this.hooks.receiversWaiting()) this.reopenLater();
      },
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reopenTimer);
    this.connecting?.connection.stream.destroy();
    await this.opening;
    await this.client?.end().catch(() => undefined);
    this.client = undefined;
  }
}

function unavailable(error: unknown, target: string): Error {
  if (error instanceof LeaseqError) return error;
  const message = failureText(error);
  // The database closed the session as a statement was being written to it: its reason (as the
  // FATAL of an idle_in_transaction_session_timeout) was never read, the socket failing first.
  if (sqlState(error) === 'EPIPE') {
    return new StorageUnavailableError(
      `${target} closed the connection while a statement was being sent (${message}): the database ended the session, as it does when a transaction waits between two statements for longer than its idle_in_transaction_session_timeout (a publishBatch of very many jobs prepares its rows so), when the backend is terminated or the server restarts`,
      { cause: error },
    );
  }
  return new StorageUnavailableError(`${target} cannot be reached: ${message}`, { cause: error });
}

/**
 * A failure of the database, or of the state it is in, as a typed error naming it; a
 * statement's own failure (a constraint, a syntax error) as it is.
 */
function translate(error: unknown, target: string): unknown {
  if (error instanceof LeaseqError) return error;
  if (isConnectionFailure(error)) return unavailable(error, target);
  if (isLostRace(error)) return lockedOut(error, target);
  const code = sqlState(error);
  const message = failureText(error);
  // lock_timeout, statement_timeout: as SQLite's wait for another process's lock running out.
  if (code === '55P03' || code === '57014') {
    return new StorageLockedError(
      `${target} timed the statement out (${message}): it waited longer than the database's lock_timeout or statement_timeout let it, most often for locks another transaction held; nothing of the transaction was written, run it again`,
      { cause: error },
    );
  }
  // A standby, or default_transaction_read_only on (as after a failover to a former standby).
  if (code === '25006') {
    return new StorageUnavailableError(
      `${target} takes no writes (${message}): it is read-only, a standby or a database with default_transaction_read_only on; nothing was written`,
      { cause: error },
    );
  }
  // The role lacks a privilege leaseq needs (revoked from it on leaseq's tables, functions or
  // schema, or a role that may only read): the database's grants refuse it, not the statement.
  if (refusesLeaseq(error)) {
    return new StorageUnavailableError(
      `${target} refuses leaseq's role a privilege (${message}): the role it connects as needs SELECT, INSERT, UPDATE and DELETE on leaseq's tables, EXECUTE on its functions and on pg_notify, and USAGE of their schema; grant them back; nothing was written`,
      { cause: error },
    );
  }
  if (isAborted(error)) {
    return new ConflictError(
      `${target}: the transaction was rolled back, nothing of it was committed: a statement of it failed before this one (${message}), and PostgreSQL runs nothing of a transaction after a failed statement; let that error end the transaction, or roll back to a savepoint`,
      { cause: error },
    );
  }
  return error;
}

/**
 * leaseq's own tables or functions missing from an open database: it was dropped and made again
 * (or its schema dropped, or replaced by a restore without them) under the process, or they are
 * out of the role's sight (its search_path changed, its USAGE of their schema revoked: PostgreSQL
 * then finds no such table). Not a statement's failure but the storage's, as for a SQLite file
 * deleted while open; not fixed by creating them here either: the tokens would start again at 1
 * under receipts still held. Undefined for any other error (a caller's own statement naming a
 * table of its own).
 */
function schemaGone(error: unknown, target: string): StorageUnavailableError | undefined {
  const code = sqlState(error);
  const message = failureText(error);
  if ((code !== '42P01' && code !== '42883') || !namesLeaseqObject(message)) return undefined;
  return new StorageUnavailableError(
    `${target} cannot be used: leaseq's tables are gone from the database (${message}): it was dropped and made again, or its schema dropped, while open, or the role no longer finds their schema (its search_path changed, its USAGE of the schema revoked); nothing was written. Put the search_path or the grant back, or restore the database (a restart creates empty tables where the search_path points)`,
    { cause: error },
  );
}

/** The SQLSTATE of a database error ('' for others). */
function sqlState(error: unknown): string {
  return String((error as { code?: unknown } | null)?.code ?? '');
}

/**
 * A deadlock (or a serialization failure): PostgreSQL rolled this transaction back so that
 * another one holding locks it needed could go on. The same work may succeed if run again.
 */
function isLostRace(error: unknown): boolean {
  const code = sqlState(error);
  return code === '40P01' || code === '40001';
}

function lockedOut(error: unknown, target: string): Error {
  const message = failureText(error);
  // A caller's transaction at repeatable read or serializable, the database's default (the
  // engine's own run at read committed, where a race for a row is no such failure).
  if (sqlState(error) === '40001') {
    return new StorageLockedError(
      `${target}: the transaction was rolled back, nothing of it was committed: another transaction changed what it read or meant to change since it began (${message}), which its isolation level (repeatable read or serializable, the database's default_transaction_isolation) does not allow; run it again, or make SET TRANSACTION ISOLATION LEVEL READ COMMITTED its first statement where its own statements do not need that level`,
      { cause: error },
    );
  }
  return new StorageLockedError(
    `${target}: the transaction was rolled back, waiting for locks another transaction held (${message}); run it again`,
    { cause: error },
  );
}

/**
 * A failure after which a pooled connection is dropped rather than used again: the connection
 * failed, the role was refused a privilege on leaseq's objects, or the database took no writes
 * (25006). A session keeps the role it began as: one whose role was dropped and made again
 * (under the same name) is refused everything for as long as it lives, where a new session of
 * the role made again is not. So does a session opened on a standby, or while
 * default_transaction_read_only was on: after a failover (or the setting turned off) only a new
 * session reaches a database that takes writes; one that began within READ_ONLY_SESSION_KEPT_MS
 * (`began`, performance.now()) reached it as it is now, and is kept.
 */
function retiresConnection(error: unknown, began: number | undefined): boolean {
  if (isConnectionFailure(error) || refusesLeaseq(error)) return true;
  return (
    sqlState(error) === '25006' &&
    (began === undefined || performance.now() - began >= READ_ONLY_SESSION_KEPT_MS)
  );
}

/**
 * The role refused a privilege (42501) on one of leaseq's tables or functions, or on pg_notify,
 * which its wake-ups (and the check at open that its listener hears them) call. Not a caller's
 * own statement refused on a table of its own (a grant it lacks, a row-level security policy):
 * that one is its statement's failure, as it is, whose session goes on.
 */
function refusesLeaseq(error: unknown): boolean {
  const message = failureText(error);
  return (
    sqlState(error) === '42501' && (namesLeaseqObject(message) || /\bpg_notify\b/.test(message))
  );
}

/**
 * Whether a database error's text names one of leaseq's tables or functions (`leaseq_jobs`):
 * leaseq's own statement failed there, not one of a caller's `transaction` on its own tables.
 */
function namesLeaseqObject(message: string): boolean {
  return /\bleaseq_\w+/.test(message);
}

/** Errors that say the database cannot be used, as opposed to a statement's own failure. */
function isConnectionFailure(error: unknown): boolean {
  const code = sqlState(error);
  const message = (error as Error | null)?.message ?? '';
  return (
    /^(ECONN|ENOTFOUND|ETIMEDOUT|EHOSTUNREACH|EPIPE)/.test(code) ||
    // 08P01 (protocol_violation) is most often a statement's own: values that do not match its
    // placeholders. A connection it breaks ends, and is seen as such.
    (/^(08|28|3D|53|57P)/.test(code) && code !== '08P01') ||
    // The session ended for idling in a transaction (idle_in_transaction_session_timeout): the
    // answer to a statement that went out as the FATAL came back.
    code === '25P03' ||
    /Connection terminated|is not queryable|timeout exceeded when trying to connect/i.test(message)
  );
}
