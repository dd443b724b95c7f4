import { addUnknownOptions } from '../core/errors.js';
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
  ReserveOptions,
  ResolvedQueueOptions,
  SessionOptions,
} from '../core/index.js';
import { ValidationError } from '../core/index.js';
import { show } from '../core/validate.js';
import type { SqlParameter, StorageCloseOptions } from '../engine/engine.js';

export type { StorageCloseOptions };

import type { ScheduleOptions, ScheduleView, ScheduleWhen } from './schedule-times.js';
import type { Scheduler, SchedulerOptions } from './scheduler.js';

/** What `receive` takes: a reserve's options (R6, R22), and how long to wait. */
export interface ReceiveOptions extends ReserveOptions {
  /** Milliseconds to wait for a job when none is ready. Integer ≥ 0, default 0. */
  wait?: number;
  /** Ends the wait early (an empty answer). */
  signal?: AbortSignal;
}

/** The names of a receive's options that are not its reserve's (any other is refused). */
export const RECEIVE_ONLY_OPTIONS: ReadonlySet<string> = new Set(['wait', 'signal']);

/** A receive's own options, `wait` and `signal`: a ValidationError naming a bad one. */
export function checkReceiveOnly(wait: unknown, signal: unknown): void {
  if (!Number.isSafeInteger(wait) || (wait as number) < 0) {
    throw new ValidationError(`wait must be an integer ≥ 0 (ms), got ${show(wait)}`);
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new ValidationError(`signal must be an AbortSignal, got ${show(signal)}`);
  }
}

/**
 * `Broker.close`'s options: a ValidationError naming what is wrong (a misspelt `signal` would
 * otherwise be a close that waits forever where its caller meant it not to).
 */
export function checkCloseOptions(options: unknown): StorageCloseOptions {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(`close: options must be an object, got ${show(options)}`);
  }
  const issues: string[] = [];
  addUnknownOptions(issues, Object.keys(options), (name) => name === 'signal');
  const { signal } = options as { signal?: unknown };
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    issues.push(`signal must be an AbortSignal, got ${show(signal)}`);
  }
  if (issues.length > 0) throw new ValidationError(issues.map((issue) => `close: ${issue}`));
  return options as StorageCloseOptions;
}

/** The bounds of `Queue.limits`: times in ms, sizes in bytes. */
export interface QueueLimits {
  /** Longest publish or nack delay. */
  maxDelayMs: number;
  /** Longest lease a receive or extend may ask for. */
  maxVisibilityMs: number;
  /** Most entries one call may carry: jobs of a publishBatch, ids of a redrive, receipts of an ack. */
  maxBatch: number;
  /**
   * Most bytes of one request (a server's maxBodyBytes, its envelope included): the jobs of a
   * publishBatch, as JSON, must fit in it. Infinity when the server does not say.
   */
  maxBodyBytes?: number;
}

/**
 * One queue as users see it, in-process or over HTTP: the operations of SPEC.md with time
 * supplied by the broker. Times and durations are milliseconds.
 *
 * `P` is the type of the queue's payloads (`broker.queue<P>(name)`), unknown by default. It is
 * a claim the compiler checks where payloads go in (`publish`, `publishBatch`, `schedule`) and
 * trusts where they come out (`receive`, `job`, dead letters): nothing is checked at run time,
 * and a job published by another program, an older version, `curl` or the SQS endpoint may not
 * match it. Validate payloads where they arrive when that matters. `execute` takes operations
 * of any payload. A `Queue<P>` may be passed where a `Queue` (of unknown payloads) is taken.
 */
export interface Queue<P = unknown> {
  /** The queue's name. */
  readonly name: string;
  /**
   * true once the broker this handle came from was closed in this process: its calls fail with
   * CLOSED for good. A server shutting down answers CLOSED too, but leaves this false: that
   * passes once it is back. Absent where the handle cannot tell.
   */
  readonly closed?: boolean | undefined;
  /** The queue's options, defaults filled in. */
  options(): Promise<ResolvedQueueOptions>;
  /**
   * Executes operations (see `parseOperation`, `build`) in order, as one unit of the storage:
   * each is answered on its own, and one that is refused does not fail the others.
   */
  execute(operations: readonly Operation[]): Promise<Outcome[]>;
  /** Publishes one job (R4); a duplicate id changes nothing and says `duplicate: true`. */
  publish(input?: PublishInput<P>): Promise<PublishResult>;
  /** All-or-nothing (R5). */
  publishBatch(inputs: readonly PublishInput<P>[]): Promise<PublishResult[]>;
  /** Reserves up to `max` jobs, waiting up to `wait` ms for the first one. */
  receive(options?: ReceiveOptions): Promise<Delivery<P>[]>;
  /** R8: completes the delivery; false when the token is stale (nothing changes). */
  ack(token: number): Promise<boolean>;
  /** R8 for each token, in order, in one step. */
  ackMany(tokens: readonly number[]): Promise<boolean[]>;
  /**
   * R9: gives the job back (requeue, the default) or dead-letters it; false when the token is
   * stale.
   */
  nack(token: number, options?: NackOptions): Promise<boolean>;
  /** The same as `nack`. */
  reject(token: number, options?: NackOptions): Promise<boolean>;
  /** Returns the new deadline (ms), or null when the token is stale. */
  extend(token: number, visibility: number): Promise<number | null>;
  /** R16: opens a consumer session; returns its id. */
  openSession(options?: SessionOptions): Promise<string>;
  /** R16: keeps the session open for another heartbeat timeout. */
  heartbeat(sessionId: string): Promise<void>;
  /** R16: ends the session and releases its live deliveries; returns how many. */
  closeSession(sessionId: string): Promise<number>;
  /** R11: acks every live delivery of the session with a token ≤ `token`; returns how many. */
  ackUpTo(sessionId: string, token: number): Promise<number>;
  /** R11: nacks every live delivery of the session with a token ≤ `token`; returns how many. */
  nackUpTo(sessionId: string, token: number, options?: NackOptions): Promise<number>;
  /** Every dead letter, in the order they died (for a queue with many, see deadLetterPage). */
  deadLetters(): Promise<DeadLetter<P>[]>;
  /**
   * A page of the dead letters, in the order they died: at most `limit` (1 to 1000, default
   * 100), starting after the page whose `next` is `after`; `next` is absent on the last page.
   * With payloads the page also ends at the job whose payload text reaches
   * DEAD_LETTER_PAGE_CHARS (8 Mi characters of JSON).
   * `payloads: false` (default true) leaves every `payload` out, neither asked of the storage
   * nor sent by a server: the page to list many dead jobs by, `job(id)` reading one's payload.
   */
  deadLetterPage(options?: DeadLetterPageOptions): Promise<DeadLetterPage<P>>;
  /** R14: moves dead jobs (all, or those named) to the back of ready; returns how many. */
  redrive(ids?: readonly string[]): Promise<number>;
  /** Removes dead jobs (all, or those named) for good; returns how many. */
  purge(ids?: readonly string[]): Promise<number>;
  /**
   * Empties the queue (R19): ready, delayed and active jobs are removed and counted, active
   * deliveries end (their tokens are refused from then on); dead jobs only with `dead: true`.
   */
  purgeQueue(options?: {
    /** true: the dead jobs are removed too. Default false. */
    dead?: boolean;
  }): Promise<PurgeQueueResult>;
  /**
   * R26: moves ready and delayed jobs (all, or `ids`) to `to`, or each back to the queue it was
   * dead-lettered from, keeping ids, payloads and histories (deliveryCount 0); at most `max`.
   * Jobs the target cannot take (no such queue, id present there) stay. Returns how many moved.
   */
  moveJobs(options?: MoveJobsOptions): Promise<number>;
  /**
   * R28: cancels the job `id`: ready or delayed, it dies with reason `cancelled` (or is removed
   * with `remove: true`); active, its delivery ends at once and its token is refused from then
   * on (the holder learns at its next extend or ack). False when the job is not there or is
   * already dead.
   */
  cancel(
    id: string,
    options?: {
      /** true: the job is removed rather than dead with reason `cancelled`. Default false. */
      remove?: boolean;
    },
  ): Promise<boolean>;
  /**
   * Tells `listener` the token of each live delivery of this queue cancelled through this
   * process's storage (R28), so that its holder stops at once; returns the removal. Absent
   * where no such news can come (over HTTP): holders learn at their next extend or ack.
   */
  watchCancels?(listener: (token: number) => void): () => void;
  /**
   * Calls `listener` at each wake-up of this queue that its waiting receives all look at:
   * something may have made jobs ready, or ended a session (R16), through this process's
   * storage or, where the storage tells, another process's (PostgreSQL's notifications). Not
   * at one whose jobs the storage handed to the waiting receives itself, in which no session
   * ended. Returns the removal. What a server watches for the end of a session in which no
   * receive waits; absent where no such news can come (over HTTP).
   */
  watchWakes?(listener: () => void): () => void;
  /**
   * Calls `listener` once when the broker this handle came from is closed in this process
   * (`closed` turns true), with the error its calls fail with from then on; returns the removal.
   * Not called for a broker closed already: read `closed` first. Absent where the handle cannot
   * tell (a wrapper that does not pass it on).
   */
  watchClose?(listener: (cause: Error) => void): () => void;
  /**
   * The longest delay and lease this queue takes where something in front of its storage bounds
   * them (a server's limits: a longer one is refused). Absent in-process, where they are not.
   */
  limits?(): Promise<QueueLimits>;
  /** The queue's gauges and counters (R17). */
  stats(): Promise<QueueStats>;
  /**
   * The queue's state: ready ids front first, delayed jobs in promotion order, live deliveries
   * in token order, dead jobs in the order they died, grouped jobs waiting (R24). With `limit`
   * (a positive integer; default all) only the first `limit` of each list, read as such from
   * the storage: a cheap look at the front of a long queue. Takes no time and changes nothing.
   */
  inspect(options?: InspectOptions): Promise<InspectView>;
  /**
   * Every live delivery in token order, with delivery times and sessions (for a queue with
   * many in flight, see deliveryPage). Takes no time.
   */
  deliveries(): Promise<LiveDelivery[]>;
  /**
   * A page of the live deliveries in token order, the oldest first: at most `limit` (1 to 1000,
   * default 100), those with a token above the page whose `next` is `after`; `next` is absent
   * on the last page. How many are in flight in all is `stats().active`. Takes no time.
   */
  deliveryPage(options?: DeliveryPageOptions): Promise<DeliveryPage>;
  /** One job by id, with its history; undefined when no such job exists. */
  job(id: string): Promise<JobView<P> | undefined>;
  /**
   * Creates or replaces the periodic job `name` of this queue (R25), stored in the engine:
   * `when` is a cron expression (read in `timezone`, default UTC) or an interval in ms (at least
   * 1000). Every occurrence is published once, with the id `name@ISO time`, by the schedulers
   * running over the storage (`leaseq serve` runs one). After downtime only the latest missed
   * occurrence is published. Set again with the same definition, it stays as it is (its phase
   * and the occurrence published last): a deploy may set its schedules at every start.
   */
  schedule(
    name: string,
    when: ScheduleWhen,
    options?: ScheduleOptions<P>,
  ): Promise<ScheduleView<P>>;
  /** This queue's schedules, by name, with their next occurrence. */
  schedules(): Promise<ScheduleView<P>[]>;
  /** Removes a schedule; false when there was none. */
  removeSchedule(name: string): Promise<boolean>;
}

/** A transaction on a SQL engine's database, with the broker's clock. `?` placeholders. */
export interface BrokerTransaction {
  /** Rows of a SELECT, run in the transaction. */
  query<Row extends object>(sql: string, params?: readonly SqlParameter[]): Promise<Row[]>;
  /** Runs a statement in the transaction; returns how many rows it changed. */
  run(sql: string, params?: readonly SqlParameter[]): Promise<number>;
  /** `Queue.ack` on the named queue, in the transaction. */
  ack(queue: string, token: number): Promise<boolean>;
  /** `Queue.nack` on the named queue, in the transaction. */
  nack(queue: string, token: number, options?: NackOptions): Promise<boolean>;
  /** `Queue.publish` on the named queue, in the transaction. */
  publish(queue: string, input?: PublishInput): Promise<PublishResult>;
  /** The inbox: false when `consumer` already processed `jobId` (see EngineTransaction). */
  claimOnce(consumer: string, jobId: string): Promise<boolean>;
  /**
   * Forgets the consumer's inbox entries older than `maxAgeMs`. Keep entries at least as long
   * as a job can still be redelivered (the publisher's retries plus the queue's retries).
   */
  pruneInbox(consumer: string, maxAgeMs: number): Promise<number>;
}

/** Named queues over one storage, in-process or over HTTP. */
export interface Broker {
  /**
   * Whether what the storage holds (jobs, their tokens) survives a restart of the process (R5);
   * undefined where the broker cannot tell (over HTTP).
   */
  readonly durable?: boolean;
  /**
   * Opens (creating when missing) the named queue. See Engine.queue for options. `P`, the type
   * of its payloads, is the caller's claim (see Queue): default unknown.
   */
  queue<P = unknown>(name: string, options?: QueueOptions): Promise<Queue<P>>;
  /**
   * `queue`, saying whether this call created the queue: the storage decides, so of two
   * processes creating one queue at once exactly one hears `created: true`. In-process brokers
   * only (over HTTP, `PUT /v1/queues/{name}` answers the same).
   */
  ensureQueue?<P = unknown>(
    name: string,
    options?: QueueOptions,
  ): Promise<{
    /** The queue. */
    queue: Queue<P>;
    /** true when this call created it. */
    created: boolean;
  }>;
  /**
   * The named queue without reading or creating anything: its calls answer NOT_FOUND while no
   * queue of that name exists (for code that must not create one, as a server's lookups).
   */
  handle<P = unknown>(name: string): Queue<P>;
  /**
   * `handle`, but on one queue rather than its name: the queue of that name its first call
   * finds. Once that queue is deleted its calls answer NOT_FOUND, also when another queue was
   * made under the name since (by this process or another sharing the storage), so work begun
   * on one queue never goes on in its successor. In-process brokers only; over a storage that
   * cannot tell one queue of a name from the next, the same as `handle`.
   */
  pinnedHandle?<P = unknown>(name: string): Queue<P>;
  /** Changes the named queue's options (those given; the others stay); returns them all. */
  updateQueue(name: string, options: QueueOptions): Promise<ResolvedQueueOptions>;
  /** Every queue of the storage, by name, with its options. */
  listQueues(): Promise<
    {
      /** The queue's name. */
      name: string;
      /** Its options, defaults filled in. */
      options: ResolvedQueueOptions;
    }[]
  >;
  /**
   * Resolves once the storage answers a read of at most one row; fails as any call does when
   * it cannot (StorageUnavailableError, ClosedError). What a readiness probe asks: its cost does
   * not grow with the queues, as listQueues' does. In-process brokers only.
   */
  checkStorage?(): Promise<void>;
  /** Deletes the named queue and its jobs; false when there was none. */
  deleteQueue(name: string): Promise<boolean>;
  /**
   * The figures (R17) of those of the named queues that exist, by name in the order given,
   * each as its queue's `stats()` answers: read together where the storage can (one read for
   * the queues with nothing due, on SQL), so that the figures of thousands of queues do not
   * take a transaction each. In-process brokers only.
   */
  statsOfQueues?(names: readonly string[]): Promise<Map<string, QueueStats>>;
  /**
   * Runs `work` in one transaction of the SQL engine's database: the caller's statements and
   * the acks, nacks and publishes made through `tx` commit together or not at all. Fails with
   * an UnsupportedError where the storage has no transactions (memory, HTTP), and where it is
   * begun inside the `work` of another (it would wait for that one for ever). Await every call
   * on `tx` in `work`: one still under way when `work` returns fails it (ClosedError, rolled
   * back). The broker's other calls wait for it: inside `work`, make them through `tx`.
   */
  transaction<T>(work: (tx: BrokerTransaction) => Promise<T>): Promise<T>;
  /**
   * The values of a secret kept in the storage (see Engine.readSecret) that are valid now:
   * the current one first, then the previous one while its grace period lasts. Made at the
   * first call. In-process brokers only.
   */
  secretValues?(name: string): Promise<string[]>;
  /**
   * A scheduler publishing the due occurrences of every stored schedule (R25); `runOnce()` is
   * one pass, `start()` a loop until `stop()` or this broker's close. In-process brokers only
   * (`leaseq serve` runs one).
   */
  scheduler?(options?: SchedulerOptions): Scheduler;
  /**
   * Replaces a stored secret with a new random one; the old one stays valid for `graceMs`.
   * NotFoundError when the storage keeps none yet (no `secretValues` read it): nothing is made.
   */
  rotateSecret?(name: string, graceMs: number): Promise<void>;
  /**
   * Closes the storage (or the connection); the broker and its queues are unusable afterwards.
   * Waiting receives end with no jobs; calls under way finish first, unless `options.signal`
   * aborts meanwhile (see StorageCloseOptions): for a shutdown with a deadline, such as
   * `leaseq serve`'s shutdown timeout, where another transaction's lock holds a call.
   */
  close(options?: StorageCloseOptions): Promise<void>;
}
