import { LeaseqError, StorageLockedError, StorageUnavailableError } from '../../core/index.js';
import { failureText } from '../failure-text.js';
import { nextTurn } from '../next-turn.js';
import { reportLater } from '../report-later.js';
import { type CommitKind, isNeverSent, type SqlConnection } from './sql-connection.js';

/** One unit of work inside a transaction. It may run again if its batch is retried. */
export type Work<T> = (connection: SqlConnection, batch: BatchContext) => Promise<T>;

/** State shared by the works of one transaction, dropped on rollback. */
export class BatchContext {
  /** Per-batch caches, by key (e.g. loaded queue rows), saved by `beforeCommit` hooks. */
  readonly cache = new Map<string, unknown>();
  private readonly hooks: ((connection: SqlConnection) => Promise<void>)[] = [];
  private readonly afterHooks: (() => void)[] = [];
  private readonly visibleHooks: (() => void)[] = [];
  private readonly rollbackHooks: (() => void)[] = [];
  /** Set by `syncBeforeAnswers`. */
  private syncFirst = false;

  /**
   * `kind`: what this batch's commit waits for (R21). `cut`: the error the calls under way were
   * abandoned with (the storage closing), once they were.
   */
  constructor(
    readonly kind: CommitKind = 'durable',
    private readonly cut: () => Error | undefined = () => undefined,
  ) {}

  /**
   * Lets the event loop turn within this transaction, for work that would hold it long where
   * statements run in this process (SQLite): timers, sockets and signals are served meanwhile,
   * while the engine's other calls wait for the transaction. Throws once the calls under way
   * were abandoned: the transaction then rolls back, nothing of it written.
   */
  async turn(): Promise<void> {
    await nextTurn();
    const error = this.cut();
    if (error !== undefined) throw error;
  }

  beforeCommit(hook: (connection: SqlConnection) => Promise<void>): void {
    this.hooks.push(hook);
  }

  afterCommit(hook: () => void): void {
    this.afterHooks.push(hook);
  }

  /**
   * Runs once this batch committed, where the connection syncs a durable commit after it
   * (SQLite's WAL), before that sync ends: for an answer that needs no durability of this batch
   * (R21: a reservation), such as a job handed to a waiting receiver. Otherwise with the
   * `afterCommit` hooks.
   */
  afterVisible(hook: () => void): void {
    this.visibleHooks.push(hook);
  }

  /**
   * No answer of this batch goes out before a sync after its commit, even in a `lease` batch:
   * what it wrote or read must be on disk first (a token mark, R21).
   */
  syncBeforeAnswers(): void {
    this.syncFirst = true;
  }

  /** Whether the answers of calls that need no sync may go at the commit. */
  get answersBeforeSync(): boolean {
    return !this.syncFirst;
  }

  /** Whether the commit is followed by a sync (where the connection syncs after commits). */
  get needsSync(): boolean {
    return this.kind === 'durable' || this.syncFirst;
  }

  /** Runs if this batch's transaction is rolled back (its works may then run again). */
  afterRollback(hook: () => void): void {
    this.rollbackHooks.push(hook);
  }

  async flush(connection: SqlConnection): Promise<void> {
    for (const hook of this.hooks) await hook(connection);
  }

  /** Runs the `afterVisible` hooks, once. */
  visible(): void {
    runEach(this.visibleHooks.splice(0));
  }

  committed(): void {
    this.visible();
    runEach(this.afterHooks);
  }

  rolledBack(): void {
    runEach(this.rollbackHooks);
  }
}

/**
 * Runs every hook in order. One that throws (a wake-up listener's failure, say) stops neither
 * the hooks after it (a waiting receiver's hand-over, what the next step of a call keeps) nor
 * the answers of the batch's calls, which committed or rolled back all the same: its error is
 * reported as a listener's (see reportLater).
 */
function runEach(hooks: readonly (() => void)[]): void {
  for (const hook of hooks) {
    try {
      hook();
    } catch (error) {
      reportLater(error);
    }
  }
}

/**
 * Works of one kind that may run as one: consecutive calls with the same `key` in a batch are
 * handed to `run` together, which returns one result per argument, in order. Only works whose
 * sequential effect equals the merged one share a key (same queue, same `now`, same options).
 */
export interface Merge<A, R> {
  key: string;
  arg: A;
  run: (connection: SqlConnection, batch: BatchContext, args: A[]) => Promise<R[]>;
  /**
   * Where the storage can do it as one statement that commits itself (one round trip): the
   * results, or undefined, having changed nothing, when this case needs `run`. Tried when a
   * batch is this group alone.
   */
  direct?: (connection: SqlConnection, batch: BatchContext, args: A[]) => Promise<R[] | undefined>;
}

/**
 * The queues besides its own whose locks a call takes (a move's targets, R26), read before any
 * lock is taken: the batch takes them with its own (see GroupCommitExecutor's lockQueues).
 */
export type AlsoLocks = (connection: SqlConnection) => Promise<readonly string[]>;

/** What the calls of one queue are submitted through: the executor, each call marked as that queue's. */
export interface QueueExecutor {
  /** `GroupCommitExecutor.submit`, as a call of the queue. */
  submit<T>(work: Work<T>, kind?: CommitKind, alsoLocks?: AlsoLocks): Promise<T>;
  /** `GroupCommitExecutor.submitMerged`, as a call of the queue. */
  submitMerged<A, R>(merge: Merge<A, R>, kind?: CommitKind): Promise<R>;
}

interface Pending {
  work: Work<unknown>;
  /** The queue whose lock the call takes, when it is a call of one (see lockQueues). */
  queue?: string;
  /** The other queues whose locks the call takes, taken with the batch's (see lockQueues). */
  alsoLocks?: AlsoLocks;
  /** `lease` when the call only moves leases and its commit need not wait for a sync (R21). */
  kind: CommitKind;
  merge?: Merge<unknown, unknown>;
  /** Runs alone in its transaction, and any error it throws rolls that transaction back. */
  exclusive?: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Longest a durable call waits, after its commit, for more batches to share its sync (where
 * the connection syncs after commits). A sync here takes about 0.15 ms.
 */
const MAX_SYNC_DELAY_MS = 1;

/** A committed batch waiting for a sync: the callers to answer after it, with their outcomes. */
interface Unsynced {
  context: BatchContext;
  waiting: { pending: Pending; outcome: Outcome | undefined }[];
  sync: () => Promise<void>;
}

/** How often a call runs again after a `retryable` failure of its transaction. */
const MAX_RETRIES = 3;

/** Most one-statement groups in a batch that run one by one rather than in one transaction. */
const MAX_DIRECT_GROUPS = 4;

/**
 * Group commit: calls that arrive while a transaction runs are collected and committed together
 * in the next one, so a durable commit (fsync) is paid once per batch, not once per call. A
 * batch commits `lease` (no waiting for a sync) only when every call in it only moves leases;
 * where that is faster, leading lease-only calls go first in a batch of their own, answered
 * without waiting for the durable ones behind them.
 *
 * Where the connection syncs after a commit (SQLite's WAL, `laterSync`), a durable batch does
 * not sync at once: it commits and answers what needs no sync (its `lease` calls, receivers it
 * handed jobs to: R21, R32). Before the sync, the event loop turns once, so that what those
 * answers set going (a worker's next handler and its ack, a socket's next frame) commits
 * first; while that brings more calls, and for at most MAX_SYNC_DELAY_MS, their batches run
 * too. Then one sync makes them all durable and their durable calls are answered. (A sync on
 * libuv's thread pool, overlapping the next batches, measured slower here: handing a sync to
 * a thread and back costs about 50 µs, a third of the sync itself.)
 *
 * A work that fails with a LeaseqError (a bad clock, a bad argument, an ended session) has, by
 * construction, written nothing it must take back, so its batch still commits. Any other error
 * rolls the batch back; its works are then retried one per transaction so that only the faulty
 * one fails. But a StorageLockedError thrown as such (a storage that waited for another
 * process's lock for as long as it waits, and gave up) is the storage's state, not a call's:
 * every call of the batch fails with it at once, and so does every call queued behind it,
 * none of them run again to wait once more.
 */
export class GroupCommitExecutor {
  private queue: Pending[] = [];
  private running = false;
  private scheduled = false;
  private closedError: Error | undefined;
  /** Set by `abandon`: what every call not yet answered fails with, none run again. */
  private abandoned: Error | undefined;
  /** Set by `abandon`: what a call whose commit was under way then fails with. */
  private abandonedCommit: StorageUnavailableError | undefined;
  /** Resolved when the batches stop running (see drain). */
  private idle: (() => void)[] = [];
  /** Committed batches whose callers wait for the next sync, oldest first. */
  private unsynced: Unsynced[] = [];
  /** When the oldest of them committed (performance.now()). */
  private unsyncedSince = 0;

  constructor(
    private readonly acquire: () => Promise<{ connection: SqlConnection; release: () => void }>,
    /** Turns a storage failure into a typed error naming the storage. */
    private readonly translate: (error: unknown) => unknown = (error) => error,
    /**
     * True where a `lease` commit skips a sync that a durable one waits for: a leading run of
     * lease-only calls then commits apart, answered before the sync of the calls behind it.
     * Elsewhere that would only add a transaction.
     */
    private readonly leaseCommitsFaster = false,
    private readonly maxBatch = 1000,
    /** How long a sync may wait for more batches (a test sets it long, to be independent of timing). */
    private readonly maxSyncDelayMs = MAX_SYNC_DELAY_MS,
    /**
     * Whether a failure says only that this transaction lost a race with another one that
     * held locks it needed (PostgreSQL's deadlock): the storage rolled it back, and a call
     * that is not a caller's own transaction runs again, up to MAX_RETRIES times.
     */
    private readonly retryable: (error: unknown) => boolean = () => false,
    /**
     * Takes the locks of the named queues (those of a batch holding calls of several) first, in
     * one order every process keeps, where the storage keeps a lock per queue that transactions
     * of other processes wait for (PostgreSQL). Taken as each call came to them, the batches of
     * two processes holding calls of the same two queues in opposite orders deadlocked: one was
     * rolled back after the database's deadlock_timeout (a second by default), and its calls ran
     * again one by one. The queues a call also locks (`AlsoLocks`) are among them: a move of dead
     * letters back to their origins took its own queue first, then each origin, while a job dying
     * there held the origin and waited for its dead-letter queue.
     */
    private readonly lockQueues?: (
      connection: SqlConnection,
      names: readonly string[],
    ) => Promise<void>,
  ) {}

  /**
   * Runs `work` in the next batch's transaction; `queue`: the queue whose lock it takes, when
   * it is a call of one; `alsoLocks`: the other queues whose locks it takes (see lockQueues).
   */
  submit<T>(
    work: Work<T>,
    kind: CommitKind = 'durable',
    queue?: string,
    alsoLocks?: AlsoLocks,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.push({
        work,
        kind,
        queue,
        alsoLocks,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
    });
  }

  /** The executor as the calls of `queue` use it: each call marked as one of that queue. */
  forQueue(queue: string): QueueExecutor {
    return {
      submit: (work, kind, alsoLocks) => this.submit(work, kind, queue, alsoLocks),
      submitMerged: (merge, kind) => this.submitMerged(merge, kind, queue),
    };
  }

  /**
   * Runs `work` alone in its own transaction: a caller's transaction (its statements and acks
   * commit together, or roll back together on any error, and are never run twice).
   */
  submitExclusive<T>(work: Work<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.push({
        work,
        kind: 'durable',
        exclusive: true,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
    });
  }

  /** Like `submit`, but merged with neighbouring calls of the same key (see Merge). */
  submitMerged<A, R>(merge: Merge<A, R>, kind: CommitKind = 'durable', queue?: string): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const work: Work<unknown> = async (connection, batch) =>
        ((await merge.run(connection, batch, [merge.arg])) as unknown[])[0];
      this.push({
        work,
        kind,
        queue,
        merge: merge as Merge<unknown, unknown>,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
    });
  }

  /** Refuses every later call with `error`; what was submitted before still runs. */
  refuse(error: Error): void {
    this.closedError = error;
  }

  /** Resolves when everything submitted so far has settled. */
  async drain(): Promise<void> {
    while (this.running || this.queue.length > 0) {
      await new Promise<void>((resolve) => this.idle.push(resolve));
    }
  }

  /**
   * Fails every call not yet run with `error`, and the calls of the batch under way with it
   * too once their storage call returns (the storage cuts it: see SqlEngineParts.abandon), none
   * of them run again. After `refuse`, for a close that cannot wait.
   */
  abandon(error: Error, commitCut: StorageUnavailableError): void {
    this.abandoned ??= error;
    this.abandonedCommit ??= commitCut;
    for (const pending of this.queue.splice(0)) pending.reject(error);
  }

  private push(pending: Pending): void {
    if (this.closedError !== undefined) {
      pending.reject(this.closedError);
      return;
    }
    this.queue.push(pending);
    this.schedule();
  }

  private schedule(): void {
    if (this.running || this.scheduled) return;
    this.scheduled = true;
    // Let the calls of this turn of the event loop join the batch.
    setImmediate(() => {
      this.scheduled = false;
      // runBatches answers its own failures (see stopOnFailure); anything still thrown is
      // reported rather than lost as an unhandled rejection.
      this.runBatches().catch(reportLater);
    });
  }

  private async runBatches(): Promise<void> {
    if (this.running) return;
    this.running = true;
    // What is under way, for stopOnFailure: the calls being run, the batches being synced; and
    // the calls of a batch rolled back that wait for their turn to run alone.
    let underWay: Pending[] = [];
    let notRun: Pending[] = [];
    let syncing: Unsynced[] = [];
    try {
      let yielded = false;
      while (this.queue.length > 0 || this.unsynced.length > 0) {
        const due = performance.now() - this.unsyncedSince >= this.maxSyncDelayMs;
        if (this.queue.length > 0 && !(this.unsynced.length > 0 && due)) {
          const batch = this.takeBatch();
          underWay = batch;
          const ok = await this.runBatch(batch);
          if (!ok) {
            // Rolled back: each runs again alone, and those after it have taken no effect yet.
            for (const [index, pending] of batch.entries()) {
              underWay = [pending];
              notRun = batch.slice(index + 1);
              await this.runBatch([pending]);
            }
          }
          underWay = [];
          notRun = [];
          yielded = false;
        } else if (!yielded && !due) {
          // Let the continuations of the answers given so far add their calls to this sync.
          yielded = true;
          await nextTurn();
        } else {
          syncing = this.unsynced.splice(0);
          await this.syncCommitted(syncing);
          syncing = [];
        }
      }
    } catch (error) {
      if (error instanceof NothingRan) {
        this.stopOnFailure(error.cause, [], [...underWay, ...notRun], syncing);
      } else {
        this.stopOnFailure(error, underWay, notRun, syncing);
      }
    } finally {
      this.running = false;
      for (const resolve of this.idle.splice(0)) resolve();
    }
  }

  /**
   * The running of batches threw where nothing expects a throw (a connection's rollback or
   * release, the storage's translation of an error): what the connection holds, and whether
   * the batch under way committed, cannot be known. No call is left unanswered: those under
   * way (`underWay`, and every committed batch not yet synced) fail saying they may or may not
   * have taken effect; those that cannot have (`notRun`: the rest of a batch rolled back,
   * waiting to run alone; the calls of a batch that failed before any ran) and those queued
   * behind them saying they were not run; and, as after a failed sync, this executor takes no
   * more calls (the storage is reopened to go on). Each error has the failure as its cause. A
   * call answered already keeps its answer.
   */
  private stopOnFailure(
    error: unknown,
    underWay: Pending[],
    notRun: Pending[],
    syncing: Unsynced[],
  ): void {
    const reason = failureText(error);
    const notRunError = new StorageUnavailableError(
      `the storage stopped taking calls after an unexpected failure (${reason}): this call was not run; reopen the engine to go on`,
      { cause: error },
    );
    if (this.closedError === undefined) this.refuse(notRunError);
    const underWayError = new StorageUnavailableError(
      `the storage stopped taking calls after an unexpected failure (${reason}) while this call was under way: it may or may not have taken effect`,
      { cause: error, mayHaveTakenEffect: true },
    );
    for (const pending of underWay) pending.reject(underWayError);
    for (const { context, waiting } of [...syncing, ...this.unsynced.splice(0)]) {
      context.rolledBack();
      for (const { pending } of waiting) pending.reject(underWayError);
    }
    for (const pending of [...notRun, ...this.queue.splice(0)]) pending.reject(notRunError);
  }

  /** One sync for `batches`, all committed since the last: then their callers are answered. */
  private async syncCommitted(batches: Unsynced[]): Promise<void> {
    const sync = batches[0]?.sync;
    if (sync === undefined) return;
    try {
      await sync();
    } catch (error) {
      // Committed and perhaps seen, but perhaps never on disk: nothing may build on it, so this
      // executor takes no more calls (the storage is reopened, and recovered, to go on). The
      // calls of the batches committed may or may not have taken effect; those queued behind
      // them, and later ones, were never run.
      const failure = this.translate(error);
      const reason = failureText(failure);
      const options = { cause: error };
      const notRun = new StorageUnavailableError(
        `${reason} (the storage stopped taking calls after it: this call was not run; reopen the engine to go on)`,
        options,
      );
      this.refuse(notRun);
      const unsynced = new StorageUnavailableError(
        `${reason} (after this call's commit: it may or may not have taken effect, committed but perhaps not on disk)`,
        { ...options, mayHaveTakenEffect: true },
      );
      for (const { context, waiting } of batches) {
        context.rolledBack();
        for (const { pending } of waiting) pending.reject(unsynced);
      }
      for (const pending of this.queue.splice(0)) pending.reject(notRun);
      return;
    }
    for (const { context, waiting } of batches) {
      context.committed();
      for (const { pending, outcome } of waiting) settle(pending, outcome);
    }
  }

  /**
   * The next calls to commit together, in order: up to maxBatch; an exclusive call alone; a
   * leading merge group that has a one-statement form alone; a leading run of lease-only calls
   * without the durable calls after it.
   */
  private takeBatch(): Pending[] {
    if (this.queue[0]?.exclusive) return this.queue.splice(0, 1);
    const direct = this.leadingDirectGroup();
    if (direct > 0) return this.queue.splice(0, direct);
    const leaseOnly = this.leaseCommitsFaster && this.queue[0]?.kind === 'lease';
    let end = 0;
    while (
      end < this.queue.length &&
      end < this.maxBatch &&
      !this.queue[end]?.exclusive &&
      (!leaseOnly || this.queue[end]?.kind === 'lease')
    ) {
      end += 1;
    }
    return this.queue.splice(0, end);
  }

  /**
   * How many leading calls form a merge group to run alone as its one statement, or 0. Up to
   * four such groups (a server's acks interleaved with its connections' refills: `ack, reserve,
   * ack, reserve`) cost a round trip each, but each holds its locks only for its own statement;
   * one general transaction of them holds the queue's ack lock exclusively until it commits
   * (`npm run bench:scale`, two servers over PostgreSQL, 4 processes × 8: 3.4k → 4.1k jobs/s,
   * samples of backends waiting on that lock 49% → 1%).
   */
  private leadingDirectGroup(): number {
    let groups = 0;
    let firstEnd = 0;
    let key: string | undefined;
    for (let index = 0; index < this.queue.length && index < this.maxBatch; index++) {
      const { merge, exclusive } = this.queue[index] as Pending;
      if (merge?.direct === undefined || exclusive) return 0;
      if (index > 0 && merge.key === key) continue;
      groups += 1;
      if (groups > MAX_DIRECT_GROUPS) return 0;
      if (groups === 2) firstEnd = index;
      key = merge.key;
    }
    return groups === 1 ? Math.min(this.queue.length, this.maxBatch) : firstEnd;
  }

  /** Returns false when the batch rolled back on an unexpected error and should be split. */
  private async runBatch(batch: Pending[], attempt = 0): Promise<boolean> {
    // Abandoned, nothing starts again: not the calls of a batch split after a failure, nor one
    // whose connection came after the abandon cut those in use (it could wait as long again).
    if (this.failAbandoned(batch)) return true;
    let lease: { connection: SqlConnection; release: () => void };
    try {
      lease = await this.acquire();
    } catch (error) {
      // Cut by the abandon before any of the calls ran (a connection's check, say).
      if (this.failAbandoned(batch)) return true;
      let failure: unknown;
      try {
        failure = this.translate(error);
      } catch (translateError) {
        throw new NothingRan(translateError);
      }
      for (const pending of batch) pending.reject(failure);
      return true;
    }
    if (this.failAbandoned(batch)) {
      lease.release();
      return true;
    }
    const { connection } = lease;
    const outcomes: Outcome[] = [];
    const context = new BatchContext(
      batch.some((pending) => pending.kind === 'durable') ? 'durable' : 'lease',
      () => this.abandoned,
    );
    const direct = directGroup(batch);
    if (direct !== undefined) {
      let values: unknown[] | undefined;
      try {
        values = await direct(
          connection,
          context,
          batch.map((pending) => pending.merge?.arg),
        );
      } catch (error) {
        lease.release();
        // The statement commits by itself: cut off, it may have (unless it never went out).
        if (!isNeverSent(error) && this.outcomeUnknown(batch, error)) return true;
        if (this.failAbandoned(batch)) return true;
        if (batch.length > 1) return false;
        return this.failAlone(batch[0] as Pending, error, attempt);
      }
      if (values !== undefined) {
        lease.release();
        context.committed();
        batch.forEach((pending, index) => {
          pending.resolve(values[index]);
        });
        return true;
      }
    }
    const laterSync = connection.laterSync;
    let committing = false;
    try {
      await (context.kind === 'durable' && laterSync !== undefined
        ? laterSync.begin()
        : connection.begin(context.kind, batch[0]?.exclusive === true));
      if (batch[0]?.exclusive) {
        outcomes.push({ ok: true, value: await batch[0].work(connection, context) });
      } else await this.lockBatchQueues(connection, batch);
      for (let index = outcomes.length; index < batch.length; ) {
        const group = mergeGroup(batch, index);
        outcomes.push(...(await runGroup(group, connection, context)));
        index += group.length;
      }
      await context.flush(connection);
      // Abandoned meanwhile (a caller's transaction that caught the cut and went on): its
      // connection is gone, so nothing of it was written; a commit now could only fail as
      // "maybe done".
      if (this.abandoned !== undefined) throw this.abandoned;
      committing = true;
      await connection.commit();
    } catch (error) {
      try {
        // A rollback that fails leaves a connection the pool drops or resets.
        await connection.rollback().catch(() => undefined);
      } finally {
        // Even when the rollback throws at once (then the running stops, see stopOnFailure):
        // a connection never released would hold the storage's close for ever.
        context.rolledBack();
        lease.release();
      }
      if (committing && !isNeverSent(error) && this.outcomeUnknown(batch, error)) return true;
      if (error instanceof StorageLockedError) {
        this.refuseLocked(batch, error);
        return true;
      }
      if (this.failAbandoned(batch)) return true;
      if (batch.length > 1) return false;
      return this.failAlone(batch[0] as Pending, error, attempt);
    }
    lease.release();
    if (laterSync === undefined || !context.needsSync) {
      context.committed();
      batch.forEach((pending, index) => {
        settle(pending, outcomes[index]);
      });
      return true;
    }
    let waiting = batch.map((pending, index) => ({ pending, outcome: outcomes[index] }));
    if (context.answersBeforeSync) {
      // Waiting receivers get their jobs now, and calls that only moved leases their answers.
      context.visible();
      for (const { pending, outcome } of waiting)
        if (pending.kind === 'lease') settle(pending, outcome);
      waiting = waiting.filter(({ pending }) => pending.kind !== 'lease');
    }
    if (this.unsynced.length === 0) this.unsyncedSince = performance.now();
    this.unsynced.push({ context, waiting, sync: laterSync.sync });
    return true;
  }

  /**
   * Another process held the storage's lock for as long as the storage waits (see the class):
   * the batch's calls fail, and so do the calls queued behind it, each having waited at most
   * that long. (Run after it, each batch of them would wait that long again: a call made while
   * a batch waited would fail only after up to twice the wait.) A call made from now on waits
   * afresh.
   */
  private refuseLocked(batch: Pending[], error: StorageLockedError): void {
    const failure = this.translate(error);
    for (const pending of [...batch, ...this.queue.splice(0)]) pending.reject(failure);
  }

  /**
   * After `abandon`, the batch's calls fail with its error rather than run (again): one that
   * failed was cut before its commit, so rolled back. True when that is what happened.
   */
  private failAbandoned(batch: Pending[]): boolean {
    const error = this.abandoned;
    if (error === undefined) return false;
    for (const pending of batch) pending.reject(error);
    return true;
  }

  /**
   * The storage went away while a commit was on its way (a connection cut after its COMMIT
   * went out, or under a statement that commits by itself): whether it took effect cannot be
   * known, so every call of the batch fails with that error, saying so (`mayHaveTakenEffect`),
   * as a lone call does. Run again, alone, they could do twice what is already done (a publish
   * of generated ids stored twice, acks answered false). True when that is what happened.
   */
  private outcomeUnknown(batch: Pending[], error: unknown): boolean {
    const translated = this.translate(error);
    if (!(translated instanceof StorageUnavailableError)) return false;
    // Cut by the abandon, not lost: said so, rather than as a storage that cannot be reached.
    const failure = commitUnderWay(this.abandonedCommit ?? translated);
    for (const pending of batch) pending.reject(failure);
    return true;
  }

  /**
   * The queues of the batch's calls, and those they also lock (a move's targets), locked first
   * where there are several.
   */
  private async lockBatchQueues(connection: SqlConnection, batch: Pending[]): Promise<void> {
    if (this.lockQueues === undefined) return;
    const queues = new Set<string>();
    for (const pending of batch) {
      if (pending.queue !== undefined) queues.add(pending.queue);
      if (pending.alsoLocks !== undefined) {
        for (const name of await pending.alsoLocks(connection)) queues.add(name);
      }
    }
    if (queues.size > 1) await this.lockQueues(connection, [...queues]);
  }

  /**
   * A call alone in its transaction failed and was rolled back: it runs again when the failure
   * was a lost race and the call is not a caller's transaction (whose work may have done more
   * than its statements); otherwise it fails.
   */
  private async failAlone(pending: Pending, error: unknown, attempt: number): Promise<boolean> {
    if (!pending.exclusive && attempt < MAX_RETRIES && this.retryable(error)) {
      return this.runBatch([pending], attempt + 1);
    }
    pending.reject(this.translate(error));
    return true;
  }
}

/**
 * Thrown by runBatch when what failed came before any call of its batch ran (the translation
 * of a failure to get a connection): its calls have taken no effect. `cause` is that failure.
 */
class NothingRan extends Error {
  constructor(cause: unknown) {
    super('the batch failed before any of its calls ran', { cause });
  }
}

/**
 * `error` (the storage failing while a commit was under way) as the error of a call whose outcome
 * is unknown: its words, and then that it may or may not have taken effect; `mayHaveTakenEffect`.
 */
function commitUnderWay(error: StorageUnavailableError): StorageUnavailableError {
  if (error.mayHaveTakenEffect === true) return error;
  return new StorageUnavailableError(
    `${error.message} (while this call's commit was under way: it may or may not have taken effect)`,
    { cause: error.cause ?? error, mayHaveTakenEffect: true },
  );
}

function settle(pending: Pending, outcome: Outcome | undefined): void {
  if (outcome?.ok) pending.resolve(outcome.value);
  else pending.reject(outcome?.error);
}

/** The direct form of a batch that is one merge group and has one; else undefined. */
function directGroup(batch: Pending[]): Merge<unknown, unknown>['direct'] {
  const merge = batch[0]?.merge;
  if (merge?.direct === undefined) return undefined;
  if (batch.some((pending) => pending.merge?.key !== merge.key)) return undefined;
  return merge.direct;
}

/** The calls from `start` that share its merge key (just one call when it has none). */
function mergeGroup(batch: Pending[], start: number): Pending[] {
  const first = batch[start] as Pending;
  const key = first.merge?.key;
  if (key === undefined) return [first];
  let end = start + 1;
  while (end < batch.length && batch[end]?.merge?.key === key) end += 1;
  return batch.slice(start, end);
}

/** Runs a group; a LeaseqError is that group's answer, anything else aborts the batch. */
async function runGroup(
  group: Pending[],
  connection: SqlConnection,
  context: BatchContext,
): Promise<Outcome[]> {
  try {
    const first = group[0] as Pending;
    if (group.length === 1 || first.merge === undefined) {
      return [{ ok: true, value: await first.work(connection, context) }];
    }
    const args = group.map((pending) => pending.merge?.arg);
    const values = await first.merge.run(connection, context, args);
    return values.map((value) => ({ ok: true, value }));
  } catch (error) {
    if (!(error instanceof LeaseqError)) throw error;
    return group.map(() => ({ ok: false, error }));
  }
}
