import { AsyncLocalStorage } from 'node:async_hooks';
import {
  byCodeUnits,
  ClosedError,
  checkDeadLetterChain,
  checkQueueName,
  checkSameOptions,
  NotFoundError,
  type QueueOptions,
  type QueueStats,
  type ResolvedQueueOptions,
  StorageUnavailableError,
  UnsupportedError,
} from '../../core/index.js';
import { resolveQueueOptions, updatedQueueOptions } from '../../core/validate.js';
import type {
  CancelListener,
  Engine,
  EngineCapabilities,
  EngineTransaction,
  QueueHandle,
  QueueInfo,
  StorageCloseOptions,
  WakeListener,
} from '../engine.js';
import { nextTurn } from '../next-turn.js';
import type { ScheduleRecord } from '../schedules.js';
import { checkSecretName, type StoredSecret } from '../secrets.js';
import { type FiguresRead, type StepTime, statsOfMany } from '../stats-by-step.js';
import { WakeHub } from '../wake-hub.js';
import { deleteInSteps } from './delete-in-steps.js';
import { type BatchContext, GroupCommitExecutor } from './executor.js';
import { ForeignWriteWatch } from './foreign-write-watch.js';
import { Handoffs } from './handoffs.js';
import { lockOrder } from './lock-order.js';
import { type QueueAccess, wakeOnCommit } from './queue-access.js';
import {
  decodeOptions,
  forgetQueueRow,
  insertQueueRow,
  loadQueueRow,
  readQueueOptions,
} from './queue-row.js';
import {
  advanceScheduleRow,
  listScheduleRow,
  listScheduleRowsPage,
  putScheduleRow,
  removeScheduleRow,
  type SchedulePlace,
} from './schedule-rows.js';
import { readOrCreateSecret, rotateStoredSecret } from './secret-rows.js';
import type { SqlConnection, SqlDialect } from './sql-connection.js';
import { SqlQueue } from './sql-queue.js';
import { SqlTransaction } from './sql-transaction.js';
import { readQueueStats } from './stats-read.js';
import { WaitedQueues } from './waited-queues.js';

/** The most queues one read of statsOfQueues takes. */
const STATS_READ_QUEUES = 500;

/** The most schedules one read of listSchedules (of every queue) takes. */
const SCHEDULES_PER_READ = 500;

/** What a dialect hands the shared SQL engine. */
export interface SqlEngineParts {
  target: string;
  capabilities: EngineCapabilities;
  dialect: SqlDialect;
  /** A connection for one transaction; `release` gives it back. */
  acquire: () => Promise<{ connection: SqlConnection; release: () => void }>;
  /** Closes connections and listeners. */
  shutdown: () => Promise<void>;
  /**
   * Cuts the connections of the transactions under way, so that they roll back and their calls
   * return at once (a close that cannot wait: see StorageCloseOptions). Where calls end within a
   * bounded time anyway (SQLite's lock wait), there is none.
   */
  abandon?: () => void;
  /** See EngineOptions.clockMode. */
  followClock: boolean;
  /** Turns a storage failure into a typed error naming the storage. */
  translateError?: (error: unknown) => unknown;
  /** A `lease` commit skips a sync a durable one waits for (R21); default false. */
  leaseCommitsFaster?: boolean;
  /** A failure that only says the transaction lost a race for locks: it may run again. */
  retryable?: (error: unknown) => boolean;
  /** The storage's own clock in ms, for storages shared by machines. */
  storageTime?: () => Promise<number>;
  /**
   * A number that changes whenever another connection commits (SQLite's data_version), for
   * storages without notifications: read while receivers wait, so they wake on others' writes.
   */
  foreignWriteVersion?: () => number;
  /**
   * A receiver is about to wait: where other processes' wake-ups come over a connection of its
   * own (PostgreSQL's LISTEN), the engine opens it again here if it was lost.
   */
  beforeWait?: () => void;
}

/** The Engine over SQL storage: queues are rows, jobs are rows, and every call is a transaction. */
export class SqlEngine implements Engine {
  readonly target: string;
  readonly capabilities: EngineCapabilities;
  readonly storageTime?: () => Promise<number>;
  readonly wakes = new WakeHub();
  private readonly executor: GroupCommitExecutor;
  private readonly access: QueueAccess;
  private readonly foreignWrites: ForeignWriteWatch | undefined;
  private readonly waitedOn = new WaitedQueues();
  private closed = false;
  /** The close, shared by every call of close(). */
  private closing: Promise<void> | undefined;
  /** Aborted by any close's signal: the calls under way are abandoned. */
  private readonly abandonCalls = new AbortController();
  /** The caller's transaction whose function the code running now was called from, if any. */
  private readonly transactionOfWork = new AsyncLocalStorage<SqlTransaction>();

  constructor(private readonly parts: SqlEngineParts) {
    this.target = parts.target;
    this.capabilities = parts.capabilities;
    if (parts.storageTime !== undefined) this.storageTime = parts.storageTime;
    this.executor = new GroupCommitExecutor(
      parts.acquire,
      parts.translateError,
      parts.leaseCommitsFaster ?? false,
      undefined,
      undefined,
      parts.retryable,
      parts.dialect.lockQueueName === undefined
        ? undefined
        : (connection, names) => this.lockQueuesInOrder(connection, names),
    );
    this.access = {
      dialect: parts.dialect,
      wakes: this.wakes,
      handoffs: new Handoffs(),
      followClock: parts.followClock,
    };
    this.foreignWrites =
      parts.foreignWriteVersion === undefined
        ? undefined
        : new ForeignWriteWatch(parts.foreignWriteVersion, (queue) => this.wakes.wake(queue));
  }

  watchWakes(queue: string): () => void {
    this.parts.beforeWait?.();
    const waits = this.waitedOn.watch(queue);
    const unwatch = this.foreignWrites?.watch(queue);
    return () => {
      waits();
      unwatch?.();
    };
  }

  /** Whether a receiver of this process waits for a wake-up now. */
  get receiversWaiting(): boolean {
    return this.waitedOn.size > 0;
  }

  /**
   * Every queue a receiver waits on looks again: wake-ups of other processes may have been
   * missed (the connection that hears them was lost for a while).
   */
  wakeWaiting(): void {
    for (const queue of this.waitedOn.queues()) this.wakes.wake(queue);
  }

  async queue(name: string, options?: QueueOptions): Promise<QueueHandle> {
    return (await this.ensureQueue(name, options)).handle;
  }

  async ensureQueue(
    name: string,
    options?: QueueOptions,
  ): Promise<{ handle: QueueHandle; created: boolean }> {
    this.checkOpen();
    checkQueueName(name);
    const resolved = resolveQueueOptions(options);
    const created = await this.executor.forQueue(name).submit(async (connection, batch) => {
      // After a deletion of the same name under way elsewhere has committed: the new row then
      // continues the counters that deletion left (R6), not older ones.
      await this.lockQueueName(connection, name);
      const stored = await readQueueOptions(connection, batch, name);
      if (stored === undefined) {
        await checkChain(connection, batch, this.parts.dialect, name, resolved.deadLetterQueue);
      }
      const inserted = await insertQueueRow(connection, name, resolved);
      const existing = inserted ? resolved : await readQueueOptions(connection, batch, name);
      if (existing === undefined) return false;
      if (!inserted) checkSameOptions(name, existing, options);
      return inserted;
    });
    return { handle: this.handle(name), created };
  }

  handle(name: string): QueueHandle {
    this.checkOpen();
    checkQueueName(name);
    return new SqlQueue(name, this.executor.forQueue(name), this.access);
  }

  pinnedHandle(name: string): QueueHandle {
    this.checkOpen();
    checkQueueName(name);
    return new SqlQueue(name, this.executor.forQueue(name), this.access, true);
  }

  async updateQueue(name: string, options: QueueOptions): Promise<ResolvedQueueOptions> {
    this.checkOpen();
    checkQueueName(name);
    return this.executor.forQueue(name).submit(async (connection, batch) => {
      const row = await loadQueueRow(connection, batch, this.parts.dialect, name);
      const next = updatedQueueOptions(row.options, options);
      await checkChain(connection, batch, this.parts.dialect, name, next.deadLetterQueue);
      if (next.retention !== row.options.retention) {
        await rewriteExpiries(connection, name, next.retention);
        // Jobs may be past the new retention: the next step of the queue looks (R30).
        row.nextEventAt = Math.min(row.nextEventAt, row.queueTime);
      }
      row.options = next;
      // A queue resumed (R27) or given more room has jobs to hand out: receivers look again.
      await wakeOnCommit(this.access, connection, batch, name);
      return { ...row.options };
    });
  }

  async listQueues(): Promise<QueueInfo[]> {
    this.checkOpen();
    return this.executor.submit(async (connection) => {
      const rows = await connection.query<{ name: string; options: string }>(
        'SELECT name, options FROM leaseq_queues ORDER BY name',
      );
      return rows
        .sort((a, b) => byCodeUnits(a.name, b.name))
        .map((row) => ({ name: row.name, options: decodeOptions(row.options) }));
    }, 'lease');
  }

  async checkStorage(): Promise<void> {
    this.checkOpen();
    await this.executor.submit(async (connection) => {
      await connection.query('SELECT name FROM leaseq_queues LIMIT 1');
    }, 'lease');
  }

  async statsOfQueues(now: StepTime, names: readonly string[]): Promise<Map<string, QueueStats>> {
    this.checkOpen();
    return statsOfMany(
      (name) => this.handle(name),
      now,
      names,
      (some) => this.readStats(some, typeof now === 'number' ? now : now()),
    );
  }

  /**
   * The figures of `names` as they stand, and which of them need a step (see readQueueStats):
   * in reads of a few hundred queues, so that other calls go on between them, and the event
   * loop turns between two (on SQLite a read runs in this process: thousands of queues read
   * one after the other held every request, timer and socket of the process meanwhile).
   */
  private async readStats(names: readonly string[], now: number): Promise<FiguresRead> {
    const stats = new Map<string, QueueStats>();
    const due: string[] = [];
    const deadLetterQueues = new Map<string, string>();
    for (let start = 0; start < names.length; start += STATS_READ_QUEUES) {
      if (start > 0) await nextTurn();
      const part = await this.executor.submit(
        (connection) =>
          readQueueStats(
            connection,
            this.access.dialect,
            names.slice(start, start + STATS_READ_QUEUES),
            now,
            this.access.followClock,
          ),
        'lease',
      );
      for (const [name, figures] of part.stats) stats.set(name, figures);
      due.push(...part.due);
      for (const [name, target] of part.deadLetterQueues) deadLetterQueues.set(name, target);
    }
    return { stats, due, deadLetterQueues };
  }

  async deleteQueue(name: string): Promise<boolean> {
    this.checkOpen();
    checkQueueName(name);
    const { dialect } = this.parts;
    return this.executor.forQueue(name).submit(async (connection, batch) => {
      // Locked first, as every transaction of the queue locks it: a publish or reserve of another
      // process cannot commit between the statements below, leaving its jobs behind in no queue
      // or its tokens above the counters kept for the name (R6).
      await this.lockQueueName(connection, name);
      await connection.query(`SELECT name FROM leaseq_queues WHERE name = ?${dialect.lockRow}`, [
        name,
      ]);
      await forgetQueueRow(connection, batch, dialect, name);
      // Receivers waiting on it in other processes look again and learn it is gone (NOT_FOUND),
      // rather than at the end of their wait, or after the name was given to a new queue.
      await wakeOnCommit(this.access, connection, batch, name);
      // What this process keeps per queue goes with it: unique names made and deleted all day
      // (a queue per tenant or per task) must not grow the process.
      batch.afterCommit(() => dialect.forgetQueue?.(name));
      for (const table of ['leaseq_jobs', 'leaseq_sessions', 'leaseq_acked']) {
        await deleteInSteps(connection, dialect, batch, table, name);
      }
      await connection.run('DELETE FROM leaseq_schedules WHERE queue = ?', [name]);
      // With the queue's making: one made again under the name is another (see insertQueueRow).
      await connection.run(
        `INSERT INTO leaseq_counter_floors (name, next_token, next_session, incarnation)
         SELECT name, next_token, next_session, incarnation FROM leaseq_queues WHERE name = ?
         ON CONFLICT (name) DO UPDATE
         SET next_token = excluded.next_token, next_session = excluded.next_session,
           incarnation = excluded.incarnation`,
        [name],
      );
      return (await connection.run('DELETE FROM leaseq_queues WHERE name = ?', [name])) > 0;
    });
  }

  /**
   * Takes the locks of `names`, the queues of one batch, and of their dead-letter queues, in
   * lockOrder. The chains of dead-letter queues are read first, without a lock (one changed
   * meanwhile only puts this batch in another order, a deadlock the storage breaks and the
   * executor runs its calls again after): in one statement where the dialect has one.
   */
  private async lockQueuesInOrder(
    connection: SqlConnection,
    names: readonly string[],
  ): Promise<void> {
    const deadLetterQueueOf = new Map<string, string | undefined>();
    const chains = this.parts.dialect.deadLetterChains;
    for (let unread = [...names]; unread.length > 0; ) {
      const list = `(${unread.map(() => '?').join(', ')})`;
      const rows = await connection.query<{ name: string; options: string }>(
        chains?.(list) ?? `SELECT name, options FROM leaseq_queues WHERE name IN ${list}`,
        unread,
      );
      for (const name of unread) deadLetterQueueOf.set(name, undefined);
      for (const row of rows) {
        deadLetterQueueOf.set(row.name, decodeOptions(row.options).deadLetterQueue);
      }
      if (chains !== undefined) break;
      const next = new Set<string>();
      for (const target of deadLetterQueueOf.values()) {
        if (target !== undefined && !deadLetterQueueOf.has(target)) next.add(target);
      }
      unread = [...next];
    }
    for (const name of lockOrder(names, deadLetterQueueOf)) {
      await this.lockQueueName(connection, name);
    }
  }

  /** The dialect's lock of a queue's name (taken before its row), where it has one. */
  private async lockQueueName(connection: SqlConnection, name: string): Promise<void> {
    const statement = this.parts.dialect.lockQueueName;
    if (statement !== undefined) await connection.query(statement, [name]);
  }

  transaction<T>(work: (tx: EngineTransaction) => Promise<T>): Promise<T> {
    this.checkOpen();
    // Begun inside the function of one under way here, it would wait for that one, which
    // waits for it: for ever, every other call of the engine behind them.
    if (this.transactionOfWork.getStore()?.open) {
      return Promise.reject(
        new UnsupportedError(
          'transaction() was called inside the function given to another transaction() of this storage, which runs one at a time: it would wait for that one for ever; make the calls through the outer tx (a SAVEPOINT for a part that may fail)',
        ),
      );
    }
    return this.executor.submitExclusive(async (connection, batch) => {
      const tx = new SqlTransaction(connection, batch, this.access, (locking, names) =>
        this.lockQueuesInOrder(locking, names),
      );
      let value: T;
      try {
        value = await this.transactionOfWork.run(tx, () => work(tx));
      } catch (error) {
        // Rolled back once the calls still under way have settled: none runs after it.
        await tx.end();
        throw error;
      } finally {
        // One transaction at a time: none is open now. Disabled, the store costs nothing (on
        // Node 20 an enabled one slows every promise of the process); the next run enables it.
        this.transactionOfWork.disable();
      }
      if (await tx.end()) {
        throw new ClosedError(
          'a call on tx was still under way when the function given to transaction() returned (a call not awaited): the transaction was rolled back, nothing of it was committed; await every call on tx',
        );
      }
      return value;
    });
  }

  recordedTime(atMost: number): Promise<number | undefined> {
    this.checkOpen();
    return this.executor.submit(async (connection) => {
      const [row] = await connection.query<{ clock: number | string | null }>(
        this.parts.dialect.recordedClock ??
          'SELECT MAX(clock) AS clock FROM leaseq_queues WHERE clock <= ?',
        [atMost],
      );
      return row?.clock === null || row?.clock === undefined ? undefined : Number(row.clock);
    }, 'lease');
  }

  readSecret(name: string): Promise<StoredSecret> {
    this.checkOpen();
    checkSecretName(name);
    return this.executor.submit((connection) => readOrCreateSecret(connection, name));
  }

  rotateSecret(name: string, previousUntil: number): Promise<StoredSecret> {
    this.checkOpen();
    checkSecretName(name);
    return this.executor.submit((connection) =>
      rotateStoredSecret(connection, name, previousUntil),
    );
  }

  putSchedule(schedule: ScheduleRecord): Promise<void> {
    this.checkOpen();
    return this.executor.forQueue(schedule.queue).submit(async (connection) => {
      // Only for a queue that exists, after a deletion of it under way elsewhere: deleting the
      // queue removes its schedules, and one left behind would come back with the name (R25).
      await this.lockQueueName(connection, schedule.queue);
      const [queue] = await connection.query<{ name: string }>(
        'SELECT name FROM leaseq_queues WHERE name = ?',
        [schedule.queue],
      );
      if (queue === undefined) throw new NotFoundError(`queue ${schedule.queue} does not exist`);
      await putScheduleRow(connection, schedule);
    });
  }

  async listSchedules(queue?: string, name?: string): Promise<ScheduleRecord[]> {
    this.checkOpen();
    if (queue !== undefined && name !== undefined) {
      return this.executor.submit((connection) => listScheduleRow(connection, queue, name));
    }
    // Every schedule (of the queue, when given), as each pass of a scheduler reads them (every
    // second in every server): a few hundred a read, the event loop turning between two. In one
    // read, 10,000 schedules held a SQLite server's every request, timer and socket for 50–100 ms
    // each second, and a queue's 100,000 for 800 ms at each listing.
    const all: ScheduleRecord[] = [];
    let after: SchedulePlace | undefined;
    do {
      if (after !== undefined) await nextTurn();
      const from = after;
      const page = await this.executor.submit(
        (connection) => listScheduleRowsPage(connection, from, SCHEDULES_PER_READ, queue),
        'lease',
      );
      all.push(...page.records);
      after = page.next;
    } while (after !== undefined);
    return all.sort((a, b) => byCodeUnits(a.queue, b.queue) || byCodeUnits(a.name, b.name));
  }

  removeSchedule(queue: string, name: string): Promise<boolean> {
    this.checkOpen();
    return this.executor.submit((connection) => removeScheduleRow(connection, queue, name));
  }

  advanceSchedule(read: ScheduleRecord, to: number | null): Promise<boolean> {
    this.checkOpen();
    return this.executor.submit((connection) =>
      advanceScheduleRow(connection, this.parts.dialect, read, to),
    );
  }

  onWake(listener: WakeListener): () => void {
    return this.wakes.add(listener);
  }

  onCancel(listener: CancelListener): () => void {
    return this.wakes.addCancel(listener);
  }

  /**
   * Lets submitted calls finish (until `options.signal` aborts), then closes the storage. Every
   * close shares the first's, and any one's signal abandons what they all wait for.
   */
  close(options: StorageCloseOptions = {}): Promise<void> {
    const { signal } = options;
    this.closing ??= this.closeOnce();
    if (signal?.aborted) this.abandonCalls.abort();
    else if (signal !== undefined) {
      const abort = () => this.abandonCalls.abort();
      signal.addEventListener('abort', abort, { once: true });
      const unwatch = () => signal.removeEventListener('abort', abort);
      this.closing.then(unwatch, unwatch);
    }
    return this.closing;
  }

  private async closeOnce(): Promise<void> {
    this.closed = true;
    this.foreignWrites?.close();
    this.executor.refuse(new ClosedError(`engine ${this.target} is closed`));
    const { signal } = this.abandonCalls;
    const abandon = () => {
      this.executor.abandon(
        new ClosedError(
          `engine ${this.target} was closed while this call waited for the storage: nothing of it was written`,
        ),
        new StorageUnavailableError(
          `engine ${this.target} was closed while this call's commit was under way: it may or may not have taken effect`,
          { mayHaveTakenEffect: true },
        ),
      );
      this.parts.abandon?.();
    };
    if (signal.aborted) abandon();
    else signal.addEventListener('abort', abandon, { once: true });
    await this.executor.drain();
    await this.parts.shutdown();
  }

  private checkOpen(): void {
    if (this.closed) throw new ClosedError(`engine ${this.target} is closed`);
  }
}

/**
 * R30: the retention changed, so the expiry in force of every job of the queue is its own
 * expiresAt or its publish time plus the new retention, whichever is earlier.
 */
async function rewriteExpiries(
  connection: SqlConnection,
  name: string,
  retention: number | undefined,
): Promise<void> {
  if (retention === undefined) {
    await connection.run(
      'UPDATE leaseq_jobs SET expiry_at = expires_at WHERE queue = ? AND expiry_at IS NOT NULL',
      [name],
    );
    return;
  }
  await connection.run(
    `UPDATE leaseq_jobs SET expiry_at = CASE
       WHEN published_at IS NULL THEN expires_at
       WHEN expires_at IS NOT NULL AND expires_at < published_at + ? THEN expires_at
       ELSE published_at + ? END
     WHERE queue = ?`,
    [retention, retention, name],
  );
}

/**
 * R26: a dead-letter queue may not lead back to the queue (read in the same transaction, with
 * the options that earlier calls of the batch changed).
 */
async function checkChain(
  connection: SqlConnection,
  batch: BatchContext,
  dialect: SqlDialect,
  name: string,
  deadLetterQueue: string | undefined,
): Promise<void> {
  // One such change at a time: two processes closing a loop at once (each naming the other's
  // queue) would each read the other's chain as it was before either committed.
  if (deadLetterQueue !== undefined && dialect.lockDeadLetterChains !== undefined) {
    await connection.query(dialect.lockDeadLetterChains);
  }
  return checkDeadLetterChain(
    name,
    deadLetterQueue,
    async (queue) => (await readQueueOptions(connection, batch, queue))?.deadLetterQueue,
  );
}
