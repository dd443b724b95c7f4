import type {
  DeadLetter,
  DeadLetterPage,
  DeadLetterPageOptions,
  Delivery,
  DeliveryPage,
  DeliveryPageOptions,
  InspectOptions,
  InspectView,
  JobView,
  LiveDelivery,
  MoveJobsOptions,
  NackOptions,
  Operation,
  Outcome,
  PublishInput,
  PublishResult,
  PurgeQueueResult,
  QueueOptions,
  QueueStats,
  ReserveOperation,
  ReserveOptions,
  ResolvedQueueOptions,
  ResultOf,
  SessionOptions,
} from '../core/index.js';
import type { ScheduleRecord, ScheduleStore } from './schedules.js';
import type { StoredSecret } from './secrets.js';
import type { StepTime } from './stats-by-step.js';

/** What an engine can do beyond the contract every engine keeps. */
export interface EngineCapabilities {
  /** Committed state survives a restart of the process (R5). */
  durable: boolean;
  /** Several processes may use the same storage at once. */
  shared: boolean;
  /** A caller can ack or nack inside its own database transaction. */
  transactions: boolean;
  /** Wake-ups cross processes (e.g. LISTEN/NOTIFY), so receivers need not poll. */
  crossProcessWakeups: boolean;
}

/**
 * One queue of an engine: the methods, arguments and results of `LeaseQueue`, as promises.
 * `now` is in milliseconds and never goes back (R1, R2); the Broker supplies it.
 *
 * `execute` is the contract: a batch of parsed operations runs as one unit (one transaction
 * on the SQL engines, shared with other callers' batches: the group commit), each answered in
 * order. A `now` behind the queue's clock rejects the whole batch (ClockError). The other
 * operation methods are builders over it (see OperationHandle).
 */
export interface QueueHandle {
  /** The queue's name. */
  readonly name: string;
  /**
   * Runs the operations in order as one unit of the storage at `now` (ms); one answer each (R20).
   */
  execute(now: number, operations: readonly Operation[]): Promise<Outcome[]>;
  /** One operation: `execute` of a batch of one, its value or its error as a rejection. */
  run<O extends Operation>(now: number, operation: O): Promise<ResultOf<O>>;
  /** The queue's options, defaults filled in. */
  options(): Promise<ResolvedQueueOptions>;
  /** The queue's clock, ms: the largest `now` it has accepted (R2). */
  queueTime(): Promise<number>;
  /** Each list cut to its first `limit` entries by the storage, when one is given (R17 view). */
  inspect(options?: InspectOptions): Promise<InspectView>;
  /** The live deliveries in token order. Takes no time. */
  deliveries(): Promise<LiveDelivery[]>;
  /**
   * A page of the live deliveries in token order (see LeaseQueue.deliveryPage), read from the
   * storage as such: a range of the token index, never every delivery. Takes no time.
   */
  deliveryPage(options?: DeliveryPageOptions): Promise<DeliveryPage>;
  /** `LeaseQueue.publish` (R4). */
  publish(now: number, input?: PublishInput): Promise<PublishResult>;
  /** `LeaseQueue.publishBatch`: all-or-nothing (R5). */
  publishBatch(now: number, inputs: readonly PublishInput[]): Promise<PublishResult[]>;
  /** `alsoRead`: more option names the caller reads itself, not refused (see `build.reserve`). */
  reserve(
    now: number,
    options?: ReserveOptions,
    alsoRead?: ReadonlySet<string>,
  ): Promise<Delivery[]>;
  /** `LeaseQueue.ack` (R8). */
  ack(now: number, token: number): Promise<boolean>;
  /** `LeaseQueue.ackMany`: R8 for each token, in order. */
  ackMany(now: number, tokens: readonly number[]): Promise<boolean[]>;
  /** `LeaseQueue.nack` (R9). */
  nack(now: number, token: number, options?: NackOptions): Promise<boolean>;
  /** The same as `nack`. */
  reject(now: number, token: number, options?: NackOptions): Promise<boolean>;
  /** `LeaseQueue.extend` (R10): the new deadline (ms), or null for a stale token. */
  extend(now: number, token: number, visibility: number): Promise<number | null>;
  /** `LeaseQueue.openSession` (R16): the new session's id. */
  openSession(now: number, options?: SessionOptions): Promise<string>;
  /** `LeaseQueue.heartbeat` (R16). */
  heartbeat(now: number, sessionId: string): Promise<void>;
  /** `LeaseQueue.closeSession` (R16): how many live deliveries it released. */
  closeSession(now: number, sessionId: string): Promise<number>;
  /** `LeaseQueue.ackUpTo` (R11). */
  ackUpTo(now: number, sessionId: string, token: number): Promise<number>;
  /** `LeaseQueue.nackUpTo` (R11). */
  nackUpTo(now: number, sessionId: string, token: number, options?: NackOptions): Promise<number>;
  /** Every dead letter, in the order they died. Takes no time. */
  deadLetters(): Promise<DeadLetter[]>;
  /**
   * A page of the dead letters, in the order they died (see LeaseQueue.deadLetterPage). With
   * `payloads: false` no payload is asked of the storage, and no dead letter has one.
   */
  deadLetterPage(options?: DeadLetterPageOptions): Promise<DeadLetterPage>;
  /** `LeaseQueue.redrive` (R14). */
  redrive(now: number, ids?: readonly string[]): Promise<number>;
  /** `LeaseQueue.purge`: removes dead jobs for good. */
  purge(now: number, ids?: readonly string[]): Promise<number>;
  /** `LeaseQueue.purgeQueue` (R19). */
  purgeQueue(
    now: number,
    options?: {
      /** true: the dead jobs are removed too. Default false. */
      dead?: boolean;
    },
  ): Promise<PurgeQueueResult>;
  /** R26: moves ready and delayed jobs to another queue, or each to its origin. */
  moveJobs(now: number, options?: MoveJobsOptions): Promise<number>;
  /** R28: cancels the job `id`; false when it is not there or already dead. */
  cancel(
    now: number,
    id: string,
    options?: {
      /** true: the job is removed rather than dead with reason `cancelled`. Default false. */
      remove?: boolean;
    },
  ): Promise<boolean>;
  /** `LeaseQueue.stats` (R17) at `now`. */
  stats(now: number): Promise<QueueStats>;
  /** One job by id, with its history; undefined when none. Takes no time. */
  job(id: string): Promise<JobView | undefined>;
  /** See `LeaseQueue.nextEventAt`. */
  nextEventAt(): Promise<number | undefined>;
  /**
   * Optional: a receive that waits, handed its job by the operation that makes it ready, so
   * that a waiting receiver's job costs one commit, not two, and receivers that could not take
   * it need not look (see WakeListener's `served`). Reserves for `operation` from the jobs ready at
   * `now` (leases due by then reclaimed, as a reserve does), or else in the transaction of this
   * engine that later makes jobs of this queue ready (a publish, a nack, a redrive), answered
   * once that committed. Where it can, the receiver is in place before the reserve at `now`
   * runs, in the engine's order of transactions, so no publish lands between the two unseen.
   * `deliveries` never rejects: it answers none when `signal` aborts first (a reservation
   * already made still comes, with its commit). `armed` resolves once the receiver waits, with
   * the queue's next event (see nextEventAt) or a time before it (a bound the engine keeps: the
   * receiver then looks again early, at the cost of a reserve), or rejects when the storage
   * fails. `place` orders the receivers a transaction serves (the smallest first, as they
   * began to wait: a receiver that waits again keeps its place); without one it is served
   * after those waiting before it.
   */
  reserveOnReady?(
    now: number,
    operation: ReserveOperation,
    signal: AbortSignal,
    place?: number,
  ): {
    /** The deliveries made for `operation`; none when `signal` aborted first. */
    deliveries: Promise<Delivery[]>;
    /** Resolves once the receiver waits, with when to look again at the latest (ms). */
    armed: Promise<number | undefined>;
    /**
     * The receiver was in place before its reserve at `now` ran, in the engine's order of
     * transactions: a transaction that served the waiting receivers during its look either saw
     * it or committed before that reserve, so the look needs no second one (see WakeListener).
     */
    inPlaceBefore?: boolean;
  };
}

/** A value bound to a `?` placeholder of a caller's statement. */
export type SqlParameter = string | number | null;

/** A caller's transaction on a SQL engine's database. Statements use `?` placeholders. */
export interface EngineTransaction {
  /** Rows of a SELECT, run in the transaction. */
  query<Row extends object>(sql: string, params?: readonly SqlParameter[]): Promise<Row[]>;
  /** Runs a statement in the transaction; returns how many rows it changed. */
  run(sql: string, params?: readonly SqlParameter[]): Promise<number>;
  /** `QueueHandle.ack` on the named queue, in the transaction. */
  ack(queue: string, now: number, token: number): Promise<boolean>;
  /** `QueueHandle.nack` on the named queue, in the transaction. */
  nack(queue: string, now: number, token: number, options?: NackOptions): Promise<boolean>;
  /** `QueueHandle.publish` on the named queue, in the transaction. */
  publish(queue: string, now: number, input?: PublishInput): Promise<PublishResult>;
  /**
   * The inbox: records that `consumer` processed `jobId` at `now`; false when it already had,
   * so the effect must not run again.
   */
  claimOnce(consumer: string, jobId: string, now: number): Promise<boolean>;
  /** Forgets the consumer's inbox entries processed before `processedBefore` (ms); returns how many. */
  pruneInbox(consumer: string, processedBefore: number): Promise<number>;
  /** ScheduleStore.advanceSchedule in this transaction. */
  advanceSchedule: ScheduleStore['advanceSchedule'];
  /**
   * advanceSchedule of each, in one statement where the storage can (one for each 500 moves):
   * whether each moved. A row another transaction holds is passed over (false), as
   * advanceSchedule does. The lock of each schedule's queue, where the storage has one, is taken
   * first, as any transaction of the queue takes it.
   */
  advanceSchedules?(moves: readonly ScheduleMove[]): Promise<boolean[]>;
}

/** One schedule's record moved on by EngineTransaction.advanceSchedules. */
export interface ScheduleMove {
  /** The schedule as the pass read it: it moves only if its row is still that. */
  read: ScheduleRecord;
  /** Its new `lastAt` (ms). */
  to: number;
}

/** A queue of an engine: its name and options. */
export interface QueueInfo {
  /** The queue's name. */
  name: string;
  /** Its options, defaults filled in. */
  options: ResolvedQueueOptions;
}

/**
 * Told that jobs of `queue` may have become ready (published, requeued, released). With `served`, the transaction that made them
 * ready already offered them to every receive of this process that waits through
 * QueueHandle.reserveOnReady and is not in the middle of a look, in the order of their places,
 * as far as each could take; `served.nextEventAt` is the queue's next event as it committed (a
 * time at or before it). A waiting receive must then look again only if its look was under way
 * (and it was not in place before it: see QueueHandle.reserveOnReady), it is one of
 * `served.unseen`, or its session is one of `served.sessionsEnded`, and sleep no later than
 * that time.
 */
export type WakeListener = (queue: string, served?: ServedWake) => void;

/** What a wake-up after a transaction that served the waiting receives says (see WakeListener). */
export interface ServedWake {
  /** The queue's next event as the transaction committed: a time at or before it (ms). */
  nextEventAt: number;
  /**
   * The places (see QueueHandle.reserveOnReady) of receives that began to wait while it served
   * the others, unseen by it: each looks.
   */
  unseen: readonly number[];
  /**
   * The sessions of the queue it ended (closed, timed out: R16), if any: the receives waiting
   * in them look, to learn so, and what watches the queue's wake-ups is told, as at a wake-up
   * without `served`. The receives of other sessions need not look for it: what the ends
   * released was offered to them.
   */
  sessionsEnded?: readonly string[];
}

/** Called when a live delivery of a queue was cancelled (R28): its holder should stop. */
export type CancelListener = (queue: string, token: number) => void;

/** Storage for named queues. Every engine keeps SPEC.md exactly; memory is the reference. */
export interface Engine extends ScheduleStore {
  /** What this engine stores into, for messages (no secrets). */
  readonly target: string;
  /** What this engine can do beyond the common contract. */
  readonly capabilities: EngineCapabilities;
  /**
   * Opens the named queue, creating it with `options` when missing. When it exists and
   * `options` name a value other than the stored one, fails with a ConflictError.
   */
  queue(name: string, options?: QueueOptions): Promise<QueueHandle>;
  /** `queue`, saying whether this call created the queue (decided by the storage, atomically). */
  ensureQueue(
    name: string,
    options?: QueueOptions,
  ): Promise<{
    /** The queue. */
    handle: QueueHandle;
    /** true when this call created it. */
    created: boolean;
  }>;
  /**
   * A handle on the named queue that neither reads nor creates anything: its calls reach the
   * queue of that name when they run, and answer NOT_FOUND while there is none.
   */
  handle(name: string): QueueHandle;
  /**
   * A handle on one queue rather than on its name: the queue of that name its first call
   * finds. Once that queue is deleted, every call answers NOT_FOUND, also when another queue
   * was made under the name since, so work begun on one queue (a run of `moveJobs` calls)
   * never goes on in its successor. Where it is absent, only `handle` is.
   */
  pinnedHandle?(name: string): QueueHandle;
  /** Changes stored options; what is already delivered keeps its deadlines. */
  updateQueue(name: string, options: QueueOptions): Promise<ResolvedQueueOptions>;
  /** Every queue of the storage, by name. */
  listQueues(): Promise<QueueInfo[]>;
  /**
   * Resolves once the storage answers a read of at most one row (a readiness probe); fails as
   * any call does when it cannot. Its cost does not grow with the queues, as listQueues' does.
   */
  checkStorage(): Promise<void>;
  /**
   * The figures (R17) at `now` of those of `names` that are queues, by name in the order
   * given, as each queue's `stats` answers them, read together: one read of the storage for
   * the queues where time alone changes nothing by `now` (not moving their time), a step each
   * for the others. Where it is absent, the caller asks each queue. `now` may be a clock, read
   * as each read or step is made (see StepTime): calls of the queues made while this read is
   * under way run at the clock's later time, and a step at a time read before them would be
   * refused on a strict engine (R2).
   */
  statsOfQueues?(now: StepTime, names: readonly string[]): Promise<Map<string, QueueStats>>;
  /** Deletes the queue and every job in it. Returns false when there was none. */
  deleteQueue(name: string): Promise<boolean>;
  /**
   * The storage's own clock in ms, when machines share it: the Broker follows it, so nodes
   * with skewed clocks agree.
   */
  storageTime?(): Promise<number>;
  /**
   * The latest time the storage recorded: the largest of its queues' clocks (ms) no later than
   * `atMost`, or undefined when none is. A broker `open` makes starts its clock there at the
   * earliest, so that time goes on from what an earlier process recorded (R2) whatever this
   * machine's wall clock, or the database's (`storageTime`), says.
   */
  recordedTime?(atMost: number): Promise<number | undefined>;
  /**
   * Runs `work` in one database transaction (engines with `capabilities.transactions`): the
   * caller's statements and the acks, nacks and publishes made through `tx` commit together,
   * or all roll back when `work` throws.
   */
  transaction?<T>(work: (tx: EngineTransaction) => Promise<T>): Promise<T>;
  /** Registers a wake-up listener; returns its removal. */
  onWake(listener: WakeListener): () => void;
  /**
   * Registers a listener of the live deliveries cancelled through this engine (R28), told
   * once the cancel is committed; returns its removal. Cancels made by other processes are not
   * told: their holders learn at their next extend or ack.
   */
  onCancel?(listener: CancelListener): () => void;
  /**
   * The named secret kept in the storage (e.g. `receipt`, the receipt signing key), made once
   * (32 random bytes) at its first read: every process sharing the storage reads the same one.
   */
  readSecret(name: string): Promise<StoredSecret>;
  /**
   * Replaces the secret with a new random one; the old one stays `previous` until
   * `previousUntil` (ms). One not kept yet (never read) is not made: NotFoundError.
   */
  rotateSecret(name: string, previousUntil: number): Promise<StoredSecret>;
  /**
   * A receiver of `queue` waits from now until the returned release: an engine whose storage
   * other processes write without notifying (SQLite) watches for their commits meanwhile and
   * wakes `queue`'s listeners. Engines that notify, or are not shared, need not have it.
   */
  watchWakes?(queue: string): () => void;
  /**
   * Closes the storage; the engine and its handles are unusable afterwards. Calls already
   * submitted finish first, unless `options.signal` aborts meanwhile. Repeated calls share the
   * first's close, and any one's signal abandons what they all wait for.
   */
  close(options?: StorageCloseOptions): Promise<void>;
}

/** How a close may end the calls under way. */
export interface StorageCloseOptions {
  /**
   * When it aborts, calls still waiting for the storage are abandoned rather than waited for:
   * a transaction not yet committed is rolled back and its call fails with ClosedError; a
   * commit under way fails with StorageUnavailableError, `mayHaveTakenEffect` true (it may or
   * may not have taken effect). Without it, close waits for them however long another
   * transaction's locks hold them (PostgreSQL). SQLite's calls end within its lock wait anyway.
   */
  signal?: AbortSignal;
}
