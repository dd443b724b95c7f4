import type { BatchContext } from './executor.js';

/** A value bound to a `?` placeholder. */
export type SqlValue = string | number | null;

/**
 * What a commit waits for (R21). `durable`: until the storage has it on disk (fsync), as every
 * publish and ack must. `lease`: a commit that only moves leases (reserve, extend, heartbeat,
 * reads that let time pass); a power loss may discard it, a process crash may not.
 */
export type CommitKind = 'durable' | 'lease';

/**
 * One connection of a SQL dialect, used by one transaction at a time. Statements use `?`
 * placeholders; the dialect translates them.
 */
export interface SqlConnection {
  /** Rows of a query, columns by name; integers as JS numbers. */
  query<Row extends object>(sql: string, params?: readonly SqlValue[]): Promise<Row[]>;
  /** Runs a statement; returns the number of rows changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
  /** Runs a statement once per parameter list, in order (in-process: one call, not one each). */
  runEach(sql: string, paramLists: readonly (readonly SqlValue[])[]): Promise<void>;
  /**
   * Runs a statement whose result nobody reads, at the latest just before commit. A networked
   * dialect sends it together with the COMMIT, saving a round trip.
   */
  runBeforeCommit(sql: string, params?: readonly SqlValue[]): Promise<void>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(script: string): Promise<void>;
  /**
   * Starts a transaction whose commit waits for what `kind` says (a dialect may wait for more).
   * `forCaller`: a caller's transaction (`transaction()`), which runs the caller's own
   * statements too: a dialect then leaves how they are planned as its database's default.
   */
  begin(kind?: CommitKind, forCaller?: boolean): Promise<void>;
  /**
   * A failure before the COMMIT went out, or one the storage answered having rolled back, is
   * marked so (`markNeverSent`): nothing committed.
   */
  commit(): Promise<void>;
  rollback(): Promise<void>;
  /**
   * Where a commit can be synced after it (SQLite's WAL): a durable transaction begun by
   * `begin` commits without waiting for its sync, and `sync` then makes everything committed
   * so far as durable as a `durable` commit would have. Between the two, what it wrote is
   * visible, so answers that need no durability can go (see BatchContext.afterVisible).
   */
  readonly laterSync?: {
    begin(): Promise<void>;
    sync(): Promise<void>;
  };
}

/** Failures that came before the statement that commits reached the storage (see below). */
const neverSent = new WeakSet<object>();

/**
 * Marks `error`, thrown by a commit or by a statement that commits by itself, as having come
 * before that statement reached the storage (its connection broken before it went out), or as
 * the storage's refusal of it (an error it answered, having rolled the transaction back): nothing
 * of the transaction was committed, so its calls took no effect. Answers `error`.
 */
export function markNeverSent(error: unknown): unknown {
  if (typeof error === 'object' && error !== null) neverSent.add(error);
  return error;
}

/** True for an error that `markNeverSent` marked. */
export function isNeverSent(error: unknown): boolean {
  return typeof error === 'object' && error !== null && neverSent.has(error);
}

/** What differs between SQL dialects, beyond the connection. */
export interface SqlDialect {
  /** Appended to the select of a queue row inside a transaction: serializes a queue's writers. */
  readonly lockRow: string;
  /**
   * Appended to a select of rows to lock for a transaction, where rows are locked one by one
   * (PostgreSQL: `FOR UPDATE SKIP LOCKED`): a row another transaction holds is passed over
   * rather than waited for. Absent where a transaction holds the whole storage (SQLite).
   */
  readonly skipLocked?: string;
  /**
   * The statement that loads (and locks) a queue row for a transaction, selecting `columns`
   * with the queue name as its one parameter, where the dialect's differs from the plain
   * SELECT with `lockRow`.
   */
  loadQueueRow?: (columns: string) => string;
  /**
   * Where the dialect's `loadQueueRow` takes a lock of its own before the row (PostgreSQL's
   * advisory lock of the queue's name), that lock alone, with the name as its one parameter:
   * creating and deleting a queue take it before they read or write anything of the queue.
   */
  lockQueueName?: string;
  /**
   * A lock taken before reading the chain of dead-letter queues to set one (R26), held to the
   * commit, where transactions do not run one at a time: two that close a loop wait in turn.
   */
  lockDeadLetterChains?: string;
  /**
   * The rows (`name`, `options`) of the queues in `names` (a list of `?`, one a name) and of
   * every queue their chains of dead-letter queues lead to (R26), in one statement, read
   * without a lock. Absent: read a link of the chains at a time.
   */
  deadLetterChains?: (names: string) => string;
  /** Statement(s) run inside a transaction that made jobs of `queue` ready (cross-process wake). */
  wakeStatement?: (queue: string) => { sql: string; params: SqlValue[] };
  /**
   * True where each statement is a network round trip (write many rows per statement); false
   * for an in-process database, where one small prepared statement per row is cheaper.
   */
  readonly setBased: boolean;
  /** The jobs table, told to find rows by token through its token index. */
  readonly jobsByToken: string;
  /**
   * When the oldest ready job of a queue became ready (R17's oldestReadyAge): a statement of
   * the queue named by the SQL expression `queue` (`?`, or a column of an outer query),
   * answering one row or none with the time as `since`; usable as a scalar subquery.
   */
  oldestReadyOf(queue: string): string;
  /**
   * A statement answering the `columns` of the queue rows named by the list subquery `names`,
   * as a step would load them but read only (neither locked nor changed): where acks are
   * tallied apart from the row (PostgreSQL's one-statement path), with their tallies added.
   * Absent: the rows as stored.
   */
  readQueueRows?(columns: string, names: string): string;
  /**
   * A statement answering as `clock` the latest of the queues' clocks (their tallies added,
   * as readQueueRows) no later than the parameter `?`, or null when none is. Absent: the
   * queue rows' clocks as stored.
   */
  readonly recordedClock?: string;
  /** A subquery of one column `value` listing the elements of a JSON array parameter `?`. */
  jsonList(type: 'text' | 'integer'): string;
  /**
   * A condition that `column` is one of the elements of a JSON array parameter `?` (as
   * `column IN jsonList`), written so that an index on the columns compared before it and
   * `column` finds each element by itself, whatever the table's statistics say.
   */
  inJsonList(column: string, type: 'text' | 'integer'): string;
  /**
   * A subquery whose rows are the objects of a JSON array parameter `?`, with the named
   * columns (text or integer).
   */
  jsonRecords(columns: readonly (readonly [name: string, type: 'text' | 'integer'])[]): string;
  /**
   * Called before the commit of a transaction that handed out tokens of `queue` (up to
   * `nextToken - 1`): where a `lease` commit can be lost to a power loss, it makes a
   * high-water mark above them durable before anyone sees them, so that no token is ever
   * handed out twice across a crash (R21). Absent where every commit is durable or none is.
   */
  fenceTokens?: (
    connection: SqlConnection,
    batch: BatchContext,
    queue: string,
    nextToken: number,
  ) => Promise<void>;
  /**
   * A statement that makes the commit of the transaction it runs in wait for the storage's
   * flush, where a `lease` transaction's commit does not (PostgreSQL's `synchronous_commit`):
   * for a change of a job made in one (a job handed out at most once, R22), which must be
   * durable before it is answered (R21). Absent where `syncBeforeAnswers` is enough.
   */
  readonly durableCommit?: string;
  /** Drops what `fenceTokens` keeps of a queue in this process, once it was deleted. */
  forgetQueue?: (queue: string) => void;
  /**
   * A reserve and an ack as one statement each that commits itself (see Merge.direct), where
   * the storage can do the common case so; undefined where this case needs the general path.
   */
  readonly oneStatement?: OneStatementOps;
  /** Run first inside the migration transaction, so two processes never migrate at once. */
  migrationLock?: string;
}

/** A job a one-statement reserve took. */
export interface TakenJob {
  id: string;
  payload: string | null;
  delivery_count: number;
  token: number;
  grp: string | null;
  deadline: number;
}

/** What a one-statement reserve answers. */
export interface OneStatementReserve {
  jobs: TakenJob[];
  /**
   * Asked for (`withNextEvent`) and no job taken: the queue's stored next event, a time at or
   * before the exact one (`at` undefined: none), which a receiver that goes on to wait sleeps to.
   */
  next?: { at: number | undefined };
}

/** The one-statement forms of reserve and ack; each answers undefined, changing nothing, where it does not apply. */
export interface OneStatementOps {
  /** A reserve without a session, acked by the consumer. */
  reserve(
    connection: SqlConnection,
    args: {
      queue: string;
      now: number;
      max: number;
      visibility: number | undefined;
      followClock: boolean;
      withNextEvent: boolean;
    },
  ): Promise<OneStatementReserve | undefined>;
  /** The tokens among `tokens` that were live and are now acked. */
  ack(
    connection: SqlConnection,
    args: { queue: string; now: number; tokens: readonly number[]; followClock: boolean },
  ): Promise<Set<number> | undefined>;
}
