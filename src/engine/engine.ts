import type {
  DeadLetter,
  DeadLetterPage,
  DeadLetterPageOptions,
  Delivery,
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
import type { ScheduleStore } from './schedules.js';
import type { StoredSecret } from './secrets.js';

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
  readonly name: string;
  execute(now: number, operations: readonly Operation[]): Promise<Outcome[]>;
  /** One operation: `execute` of a batch of one, its value or its error as a rejection. */
  run<O extends Operation>(now: number, operation: O): Promise<ResultOf<O>>;
  options(): Promise<ResolvedQueueOptions>;
  queueTime(): Promise<number>;
  /** Each list cut to its first `limit` entries by the storage, when one is given (R17 view). */
  inspect(options?: InspectOptions): Promise<InspectView>;
  deliveries(): Promise<LiveDelivery[]>;
  publish(now: number, input?: PublishInput): Promise<PublishResult>;
  publishBatch(now: number, inputs: readonly PublishInput[]): Promise<PublishResult[]>;
  /** `alsoRead`: more option names the caller reads itself, not refused (see `build.reserve`). */
  reserve(
    now: number,
    options?: ReserveOptions,
    alsoRead?: ReadonlySet<string>,
  ): Promise<Delivery[]>;
  ack(now: number, token: number): Promise<boolean>;
  ackMany(now: number, tokens: readonly number[]): Promise<boolean[]>;
  nack(now: number, token: number, options?: NackOptions): Promise<boolean>;
  reject(now: number, token: number, options?: NackOptions): Promise<boolean>;
  extend(now: number, token: number, visibility: number): Promise<number | null>;
  openSession(now: number, options?: SessionOptions): Promise<string>;
  heartbeat(now: number, sessionId: string): Promise<void>;
  closeSession(now: number, sessionId: string): Promise<number>;
  ackUpTo(now: number, sessionId: string, token: number): Promise<number>;
  nackUpTo(now: number, sessionId: string, token: number, options?: NackOptions): Promise<number>;
  deadLetters(): Promise<DeadLetter[]>;
  /**
   * A page of the dead letters, in the order they died (see LeaseQueue.deadLetterPage). With
   * `payloads: false` no payload is asked of the storage, and no dead letter has one.
   */
  deadLetterPage(options?: DeadLetterPageOptions): Promise<DeadLetterPage>;
  redrive(now: number, ids?: readonly string[]): Promise<number>;
  purge(now: number, ids?: readonly string[]): Promise<number>;
  purgeQueue(now: number, options?: { dead?: boolean }): Promise<PurgeQueueResult>;
  /** R26: moves ready and delayed jobs to another queue, or each to its origin. */
  moveJobs(now: number, options?: MoveJobsOptions): Promise<number>;
  /** R28: cancels the job `id`; false when it is not there or already dead. */
  cancel(now: number, id: string, options?: { remove?: boolean }): Promise<boolean>;
  stats(now: number): Promise<QueueStats>;
  job(id: string): Promise<JobView | undefined>;
  /** See `LeaseQueue.nextEventAt`. */
  nextEventAt(): Promise<number | undefined>;
  /**
   * Optional: a receive that waits, for engines with costly commits, so that a waiting
   * receiver's job costs one commit, not two. Reserves for `operation` from the jobs ready at
   * `now` (leases due by then reclaimed, as a reserve does), or else in the transaction of this
   * engine that later makes jobs of this queue ready (a publish, a nack, a redrive), answered
   * once that committed. Where it can, the receiver is in place before the reserve at `now`
   * runs, in the engine's order of transactions, so no publish lands between the two unseen.
   * `deliveries` never rejects: it answers none when `signal` aborts first (a reservation
   * already made still comes, with its commit). `armed` resolves once the receiver waits, with
   * the queue's next event (see nextEventAt) or a time before it (a bound the engine keeps: the
   * receiver then looks again early, at the cost of a reserve), or rejects when the storage
   * fails.
   */
  reserveOnReady?(
    now: number,
    operation: ReserveOperation,
    signal: AbortSignal,
  ): { deliveries: Promise<Delivery[]>; armed: Promise<number | undefined> };
}

/** A value bound to a `?` placeholder of a caller's statement. */
export type SqlParameter = string | number | null;

/** A caller's transaction on a SQL engine's database. Statements use `?` placeholders. */
export interface EngineTransaction {
  query<Row extends object>(sql: string, params?: readonly SqlParameter[]): Promise<Row[]>;
  run(sql: string, params?: readonly SqlParameter[]): Promise<number>;
  ack(queue: string, now: number, token: number): Promise<boolean>;
  nack(queue: string, now: number, token: number, options?: NackOptions): Promise<boolean>;
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
}

export interface QueueInfo {
  name: string;
  options: ResolvedQueueOptions;
}

/** Called when jobs of a queue may have become ready (published, requeued, released). */
export type WakeListener = (queue: string) => void;

/** Called when a live delivery of a queue was cancelled (R28): its holder should stop. */
export type CancelListener = (queue: string, token: number) => void;

/** Storage for named queues. Every engine keeps SPEC.md exactly; memory is the reference. */
export interface Engine extends ScheduleStore {
  /** What this engine stores into, for messages (no secrets). */
  readonly target: string;
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
  ): Promise<{ handle: QueueHandle; created: boolean }>;
  /**
   * A handle on the named queue that neither reads nor creates anything: its calls reach the
   * queue of that name when they run, and answer NOT_FOUND while there is none.
   */
  handle(name: string): QueueHandle;
  /** Changes stored options; what is already delivered keeps its deadlines. */
  updateQueue(name: string, options: QueueOptions): Promise<ResolvedQueueOptions>;
  listQueues(): Promise<QueueInfo[]>;
  /**
   * The figures (R17) at `now` of those of `names` that are queues, by name in the order
   * given, as each queue's `stats` answers them, read together: one read of the storage for
   * the queues where time alone changes nothing by `now` (not moving their time), a step each
   * for the others. Where it is absent, the caller asks each queue.
   */
  statsOfQueues?(now: number, names: readonly string[]): Promise<Map<string, QueueStats>>;
  /** Deletes the queue and every job in it. Returns false when there was none. */
  deleteQueue(name: string): Promise<boolean>;
  /**
   * The storage's own clock in ms, when machines share it: the Broker follows it, so nodes
   * with skewed clocks agree.
   */
  storageTime?(): Promise<number>;
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
  /** Replaces the secret with a new random one; the old one stays `previous` until `previousUntil` (ms). */
  rotateSecret(name: string, previousUntil: number): Promise<StoredSecret>;
  /**
   * A receiver of `queue` waits from now until the returned release: an engine whose storage
   * other processes write without notifying (SQLite) watches for their commits meanwhile and
   * wakes `queue`'s listeners. Engines that notify, or are not shared, need not have it.
   */
  watchWakes?(queue: string): () => void;
  close(): Promise<void>;
}
