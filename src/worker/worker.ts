import { untilAborted } from '../broker/on-abort.js';
import type { Queue, QueueLimits } from '../broker/queue.js';
import { addUnknownOptions } from '../core/errors.js';
import {
  ClosedError,
  type PublishInput,
  type PublishResult,
  ValidationError,
} from '../core/index.js';
import { show } from '../core/validate.js';
import { abortableSleep } from './abortable-sleep.js';
import { AckBatcher } from './ack-batcher.js';
import { AutoAckRun } from './auto-ack-run.js';
import { errorCode, errorMessage } from './errors.js';
import { fetchRetryDelay } from './fetch-retry.js';
import type { QueueLimit } from './handler-run.js';
import { TurnWatch } from './io-turn.js';
import type { Handler, OutcomeRecord } from './job.js';
import { type HeldRun, JobRun, type JobRunDeps } from './job-run.js';
import { isLevelEnabled } from './logger.js';
import { WorkerMetrics, type WorkerMetricsSnapshot } from './metrics.js';
import { type ResolvedWorkerOptions, resolveWorkerOptions, type WorkerOptions } from './options.js';
import { type HeartbeatStep, isSessionClosed, SessionKeeper } from './session-keeper.js';
import { WakeScheduler } from './wake-scheduler.js';

/**
 * A `Queue` whose payloads are not typed (unknown), and no `Queue<P>` of another P: what `work`
 * and `Worker` take with a handler typed on its own (`work<Email>(queue, handler)`), the type
 * of the payloads then being the handler's claim. A typed queue's handler must fit its type.
 */
export type UntypedQueue = Queue & {
  /**
   * `Queue.publish`, of any payload. A function-typed property is checked strictly: the publish
   * of a `Queue<P>`, which refuses other payloads, does not fit it.
   */
  publish: (input?: PublishInput<unknown>) => Promise<PublishResult>;
};

/** What `Worker.close` takes. */
export interface CloseOptions {
  /**
   * Milliseconds the jobs in hand may still take before they are released. Integer ≥ 0.
   * Default 30000. Any length: one past the longest Node timer (about 24.8 days) is waited out
   * in parts.
   */
  timeout?: number;
}

/** Where a background error happened. */
export type WorkerErrorSource = 'fetch' | 'renew' | 'settle' | 'heartbeat';

/**
 * How often at most (worker clock, ms) a worker reads its queue's options again, so that
 * `updateQueue` of a running queue reaches its workers' new reservations: the queue's visibility
 * (for a worker that asks for it) and its maxLease (for every worker: a lease cut shorter than
 * the worker believes would end while its handler runs unaware).
 */
export const VISIBILITY_READ_EVERY_MS = 30_000;

/** The events a Worker emits, by name, with their listeners. */
export interface WorkerEvents {
  /** A job reached its final outcome (also logged). */
  outcome: (record: OutcomeRecord) => void;
  /** A background call failed; the worker goes on (also logged). */
  error: (error: unknown, during: WorkerErrorSource) => void;
  /**
   * The worker has closed: after `close()` (`cause` undefined), or by itself once its queue's
   * broker was closed in this process (`cause` the error its receive failed with, or the
   * close's `CLOSED` error when it made no receive; also logged).
   */
  closed: (cause: unknown) => void;
}

/** Where a worker is in its life: made, started, closing, or closed. */
export type WorkerState = 'created' | 'running' | 'closing' | 'closed';

/**
 * Longest `close()` waits, after its grace period, for the jobs still in hand to be given back
 * and the session closed (a healthy storage answers in milliseconds).
 */
export const GIVE_BACK_WAIT_MS = 1000;

/**
 * How long jobs started back to back may hold the event loop before it turns (ms): well under a
 * third of the shortest session timeout a heartbeat keeps (docs/worker.md).
 */
const LOOP_TURN_MS = 10;
/**
 * Jobs whose handler ended and whose ack (or nack) has not answered yet: at least this many
 * may be in hand, however low the concurrency. A worker of concurrency 1 with fast handlers
 * otherwise waits a whole ack round trip (a sync, over the network) for every other job.
 */
export const MIN_SETTLING = 48;
/**
 * ...and up to this many per slot: while one round of acks is on its way (over the stream, a
 * round trip and the server's sync), the handlers work through the next, so the worker and the
 * server overlap rather than take turns.
 */
export const SETTLING_PER_SLOT = 8;

/**
 * Consumes one queue: reserves at most `concurrency` jobs at a time (long-waiting for work),
 * runs the handler on each under a kept lease, and settles every job by its outcome
 * (docs/worker.md) — or, with `ack: 'auto'`, receives each at most once and runs it with no
 * lease and nothing to settle (R22). Talks to the queue only through the `Queue` interface.
 *
 * `P` is the type of the payloads: the queue's (`Queue<P>`), so that a handler's `job.payload`
 * is typed without annotations; or, over a queue of unknown payloads, the handler's own. A
 * claim the compiler trusts, not checked at run time (see Queue).
 */
export class Worker<P = unknown> {
  /** The queue it works on. */
  readonly queue: Queue<P>;
  private readonly options: ResolvedWorkerOptions;
  private readonly counters = new WorkerMetrics();
  private readonly inHand = new Set<HeldRun>();
  /** Runs in hand whose handler ended: their ack or nack is on its way. */
  private readonly settling = new Set<HeldRun>();
  private stopWatchingCancels: (() => void) | undefined;
  private stopWatchingClose: (() => void) | undefined;
  /** Its queue's broker was closed in this process (Queue.watchClose), with the error it gave. */
  private brokerGone: { cause: unknown } | undefined;
  /** The fetch loop is in a fetch: a close of the broker ends its receive, or fails it. */
  private loopFetching = false;
  private readonly fetches = new Set<Promise<number>>();
  private readonly stopping = new AbortController();
  /**
   * Ends the session's heartbeats: only once the jobs in hand were given back, since a close's
   * grace period keeps their leases, and a session the broker ended would release them.
   */
  private readonly keeping = new AbortController();
  /** A loop held this long by jobs started back to back turns before the next one starts. */
  private readonly turns = new TurnWatch(LOOP_TURN_MS);
  /**
   * Each event's listeners. A list is replaced, never changed in place, when one is added or
   * removed: an event goes to the listeners there were as it began, as with an EventEmitter, so
   * a listener added by another is not called with the event that added it.
   */
  private readonly listeners: { [E in keyof WorkerEvents]: readonly WorkerEvents[E][] } = {
    outcome: [],
    error: [],
    closed: [],
  };
  private readonly session: SessionKeeper | undefined;
  /** The one timer of every lease in hand. */
  private readonly scheduler: WakeScheduler;
  private setup: Promise<JobRunDeps> | undefined;
  private loop: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private closed = false;
  /** Why the worker closed by itself (its broker was closed); undefined after `close()`. */
  private closedBy: unknown;
  private reserving = 0;
  private graceEndsAt = 0;
  private graceTimer: AbortController | undefined;
  private slotFreed: (() => void) | undefined;
  /** The lease length new reservations ask for: the worker's visibility, or the queue's as last read. */
  private leaseMs = 0;
  /**
   * The queue's maxLease (R10) as last read: a lease asked longer is cut to it from the
   * reservation on, and the worker times the job's lease by what it got.
   */
  private maxLeaseMs = Number.POSITIVE_INFINITY;
  /** When the queue's visibility was last read (worker clock), or a read of it began. */
  private leaseMsReadAt = 0;
  /** A read of the queue's visibility under way. */
  private leaseMsRead: Promise<number> | undefined;

  /** A worker over a queue of payloads of type `P`, which its handler's jobs carry. */
  constructor(queue: Queue<P>, handler: Handler<P>, options?: WorkerOptions);
  /** A worker over a queue of unknown payloads, whose handler says what they are. */
  constructor(queue: UntypedQueue, handler: Handler<P>, options?: WorkerOptions);
  constructor(
    queue: Queue<P> | UntypedQueue,
    private readonly handler: Handler<P>,
    options: WorkerOptions = {},
  ) {
    const issues: string[] = [];
    if (typeof (queue as Partial<Queue> | undefined)?.receive !== 'function') {
      issues.push('queue must be a Queue');
    }
    if (typeof handler !== 'function') issues.push('handler must be a function');
    this.options = resolveWorkerOptions(options, issues);
    // The handler's claim over a queue of unknown payloads (see UntypedQueue).
    this.queue = queue as Queue<P>;
    this.scheduler = new WakeScheduler(this.options.clock);
    if (this.options.session !== undefined) {
      this.session = new SessionKeeper({
        queue,
        clock: this.options.clock,
        options: this.options.session,
        stopping: this.stopping.signal,
        onEnded: (id) => this.sessionEnded(id),
        onError: (error) => this.reportError(error, 'heartbeat'),
      });
    }
  }

  /** Where it is in its life. */
  get state(): WorkerState {
    if (this.closed) return 'closed';
    if (this.closing !== undefined) return 'closing';
    return this.loop === undefined ? 'created' : 'running';
  }

  /** Starts the fetch loop; resolves once the queue's options were read. Idempotent. */
  async start(): Promise<void> {
    this.checkOpen();
    await this.ready();
    if (this.loop !== undefined || this.closing !== undefined) return;
    // R28: a job cancelled through this process's storage stops its handler at once; others
    // learn at their next renewal (the extend is refused).
    const stopWatchingCancels = this.queue.watchCancels?.((token) => this.cancelled(token));
    try {
      // Its broker closed in this process: with every slot taken no receive would fail to say
      // so. Watched before the loop starts: a queue whose watch throws (a wrapper of one's own)
      // fails the start with nothing left running or watched, not a worker nobody can close.
      this.stopWatchingClose = this.queue.watchClose?.((cause) => this.brokerClosed(cause));
    } catch (error) {
      stopQuietly(stopWatchingCancels);
      throw error;
    }
    this.stopWatchingCancels = stopWatchingCancels;
    // Told of a close as the watch began (a queue of one's own): closing already, nothing to run.
    if (this.closing !== undefined) return;
    this.loop = this.fetchLoop();
    this.session?.run(this.keeping.signal).catch((error) => this.reportError(error, 'heartbeat'));
  }

  /**
   * One fetch step: reserves up to the free slots (waiting up to `wait` ms, default 0 for
   * none) and starts a handler on each job. Returns how many it started.
   */
  async runOnce(
    options: {
      /** Milliseconds to wait for a job when none is ready. Default 0. */
      wait?: number;
    } = {},
  ): Promise<number> {
    // Checked as close() checks its options: a misspelt wait is not the default, and a bad one
    // is the caller's mistake, not a failed fetch.
    const wait = runOnceWait(options);
    this.checkOpen();
    return this.fetchOnce(wait);
  }

  /** One renewal step of every job in hand. Returns how many leases it renewed. */
  async renewOnce(): Promise<number> {
    const steps = await Promise.all([...this.inHand].map((run) => run.renewOnce()));
    return steps.filter((step) => step === 'renewed').length;
  }

  /** One heartbeat of the worker's session ('none' without one). */
  heartbeatOnce(): Promise<HeartbeatStep> {
    return this.session?.heartbeatOnce() ?? Promise.resolve('none');
  }

  /**
   * Stops fetching (ending a pending long wait), lets the jobs in hand finish for up to
   * `timeout` ms (acking those that do), then releases the rest for immediate redelivery and
   * fires their signals. Closes the worker's session. Repeated calls share the first; one with
   * a shorter timeout cuts the grace period.
   */
  close(options: CloseOptions = {}): Promise<void> {
    // Checked as work() checks its options: a misplaced or misspelt timeout is not the default.
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      return Promise.reject(
        new ValidationError(`close: options must be an object, got ${show(options)}`),
      );
    }
    const unknown: string[] = [];
    addUnknownOptions(unknown, Object.keys(options), (name) => name === 'timeout');
    if (unknown.length > 0) {
      return Promise.reject(new ValidationError(unknown.map((issue) => `close: ${issue}`)));
    }
    const { timeout = 30_000 } = options;
    if (!Number.isSafeInteger(timeout) || timeout < 0) {
      return Promise.reject(
        new ValidationError(`close: timeout must be an integer ≥ 0 (ms), got ${show(timeout)}`),
      );
    }
    const endsAt = this.options.clock.now() + timeout;
    if (this.closing === undefined) {
      this.graceEndsAt = endsAt;
      this.closing = this.shutdown();
    } else if (endsAt < this.graceEndsAt) {
      // A later, shorter close (a second signal) cuts the grace period.
      this.graceEndsAt = endsAt;
      this.graceTimer?.abort();
    }
    return this.closing;
  }

  /** A snapshot of the worker's counters (R17). */
  metrics(): WorkerMetricsSnapshot {
    return this.counters.snapshot(this.inHand.size);
  }

  /**
   * Listens to an event; returns the removal. An event the worker does not emit, or a listener
   * that is not a function, is a ValidationError: either would never be called.
   */
  on<E extends keyof WorkerEvents>(event: E, listener: WorkerEvents[E]): () => void {
    if (typeof event !== 'string' || !Object.hasOwn(this.listeners, event)) {
      const events = Object.keys(this.listeners).map((name) => `'${name}'`);
      const last = events.pop();
      throw new ValidationError(
        `on: event must be ${events.join(', ')} or ${last}, got ${show(event)}`,
      );
    }
    if (typeof listener !== 'function') {
      throw new ValidationError(`on: listener must be a function, got ${show(listener)}`);
    }
    const listeners = this.listeners as unknown as Record<E, readonly WorkerEvents[E][]>;
    const current: readonly WorkerEvents[E][] = listeners[event];
    // The same function added twice is called once, and removed by either removal.
    if (!current.includes(listener)) listeners[event] = [...current, listener];
    return () => {
      const now: readonly WorkerEvents[E][] = listeners[event];
      listeners[event] = now.filter((known) => known !== listener);
    };
  }

  /** Reads the queue's options at start; what every job run of this worker shares. */
  private ready(): Promise<JobRunDeps> {
    this.setup ??= Promise.all([this.queue.options(), this.queue.limits?.()]).then(
      ([queueOptions, limits]): JobRunDeps => {
        const { options, queue } = this;
        const leaseMs = options.visibility ?? queueOptions.visibility;
        if (limits !== undefined) checkWithinLimits(options, leaseMs, limits);
        this.leaseMs = leaseMs;
        this.maxLeaseMs = queueOptions.maxLease;
        this.leaseMsReadAt = options.clock.now();
        return {
          queue,
          queueName: queue.name,
          handler: this.handler as Handler<never>,
          options,
          metrics: this.counters,
          maxDeliveries: maxDeliveriesOf(queue, queueOptions.maxDeliveries),
          maxDelay: limits?.maxDelayMs ?? Number.POSITIVE_INFINITY,
          maxVisibility: limits?.maxVisibilityMs ?? Number.POSITIVE_INFINITY,
          renewal: {
            queue,
            clock: options.clock,
            scheduler: this.scheduler,
            leaseMs,
            policy: options.renew,
            renewAt: options.renewAt,
            maxRenewals: options.maxRenewals,
          },
          acks: new AckBatcher(queue),
          onHandlerEnded: (run) => this.handlerEnded(run),
          onSettled: (run, record) => this.settled(run, record),
          onError: (error, during) => this.reportError(error, during),
        };
      },
      (error: unknown) => {
        this.setup = undefined;
        throw error;
      },
    );
    return this.setup;
  }

  private async fetchLoop(): Promise<void> {
    let failures = 0;
    while (!this.stopping.signal.aborted) {
      // Told of its broker's close during a fetch: that fetch may have filled every slot, and
      // then no receive is left to fail; and one made after the close that did not fail was the
      // last that could answer.
      const gone = this.brokerGone;
      if (this.freeSlots() === 0) {
        if (gone !== undefined) {
          this.closeByItself(gone.cause);
          return;
        }
        await new Promise<void>((resolve) => {
          this.slotFreed = resolve;
        });
        continue;
      }
      let failed: { error: unknown } | undefined;
      this.loopFetching = true;
      try {
        await this.fetchOnce(this.options.wait);
        failures = 0;
      } catch (error) {
        failed = { error };
      }
      this.loopFetching = false;
      if (failed === undefined) {
        if (gone !== undefined) {
          this.closeByItself(gone.cause);
          return;
        }
        continue;
      }
      // This process closed the queue's broker: no receive can succeed again. A server that
      // shuts down (or restarts) answers CLOSED as well, but leaves `closed` false: retried.
      if (closedHere(this.queue) || this.brokerGone !== undefined) {
        this.closeByItself(failed.error);
        return;
      }
      failures += 1;
      await abortableSleep(this.options.clock, fetchRetryDelay(failures), this.stopping.signal);
    }
  }

  private fetchOnce(wait: number): Promise<number> {
    const fetch = this.reserveAndStart(wait);
    this.fetches.add(fetch);
    const forget = () => this.fetches.delete(fetch);
    fetch.then(forget, forget);
    return fetch;
  }

  private async reserveAndStart(wait: number): Promise<number> {
    // Read at start; a step made before it (runOnce) reads them here, and a stopping worker
    // waits for that read no longer (it goes on; a start awaiting it gets its answer).
    const deps = await untilAborted(this.ready(), this.stopping.signal);
    if (deps === undefined) return 0;
    const free = this.freeSlots();
    if (free === 0) return 0;
    this.reserving += free;
    // What this reservation asks for is what its jobs' leases are kept by.
    let leaseMs = this.leaseMs;
    let session: string | undefined;
    let deliveries: Awaited<ReturnType<Queue['receive']>>;
    const atMostOnce = this.options.ack === 'auto';
    try {
      if (!atMostOnce) {
        const asked = this.leaseMsToAsk();
        if (typeof asked === 'number') leaseMs = asked;
        else {
          const read = await untilAborted(asked, this.stopping.signal);
          // Stopped while the queue's options were read: no receive, so nothing is reserved.
          if (read === undefined) return 0;
          leaseMs = read;
        }
      }
      if (this.session !== undefined) {
        session = await this.session.current();
        // Stopped while the session opened: no receive, so nothing is reserved to give back.
        if (session === undefined) return 0;
      }
      deliveries = await this.queue.receive({
        max: free,
        wait,
        // R22: removed as handed out, no lease; or a lease of the worker's length.
        ...(atMostOnce ? { ack: 'auto' as const } : { visibility: leaseMs }),
        signal: this.stopping.signal,
        ...(session === undefined ? {} : { session }),
      });
    } catch (error) {
      if (session !== undefined && isSessionClosed(error)) {
        this.session?.ended(session);
        return 0;
      }
      this.counters.fetchErrors += 1;
      this.reportError(error, 'fetch');
      throw error;
    } finally {
      this.reserving -= free;
      // The slots it did not fill are free again: a fetch loop started while a runOnce waited
      // found none free, and waits for this (its jobs are in hand before the loop runs again).
      this.wakeFetch();
    }
    const receivedAt = this.options.clock.now();
    this.counters.received += deliveries.length;
    let started = 0;
    const unrun: HeldRun[] = [];
    // All in hand before any starts: a cancel or a session's end that comes while the loop
    // turns between them finds the jobs not started yet, which then do not start.
    const runs = deliveries.map((delivery) =>
      atMostOnce
        ? new AutoAckRun(delivery, receivedAt, deps)
        : new JobRun(delivery, receivedAt, session, deps, Math.min(leaseMs, this.maxLeaseMs)),
    );
    for (const run of runs) this.inHand.add(run);
    for (const run of runs) {
      // Reserved while closing: give it back unrun. A job received at most once cannot go
      // back, so it runs within the grace period.
      // Handlers that block, started back to back, would hold the loop for all of them: the
      // loop turns first, so heartbeats and renewals go out and their answers are read.
      if (this.turns.due()) await this.turns.turn();
      // Answered once the close is over (a receive that got no answer in time), a job does not
      // run at all: received at most once, it is lost, as one whose handler outlived the close.
      if (this.stopping.signal.aborted && (!atMostOnce || this.closed)) {
        unrun.push(run);
        continue;
      }
      if (run.start()) started += 1;
    }
    // The last first, as at close: they go back in the order they were reserved.
    for (const run of unrun.reverse()) void run.release();
    return started;
  }

  /**
   * Slots for handlers: `concurrency` run at once. A job whose handler ended frees its slot
   * while its ack travels, so the next job starts without waiting for that answer; the jobs
   * being settled are at most SETTLING_PER_SLOT per slot, or MIN_SETTLING where that is more,
   * which bounds the leases in hand.
   */
  private freeSlots(): number {
    const { concurrency } = this.options;
    const running = this.inHand.size - this.settling.size;
    const mostInHand = concurrency + Math.max(SETTLING_PER_SLOT * concurrency, MIN_SETTLING);
    return Math.max(
      0,
      Math.min(concurrency - running, mostInHand - this.inHand.size) - this.reserving,
    );
  }

  /**
   * The lease length to ask for now: the worker's visibility, or the queue's. The queue's
   * options are read again once VISIBILITY_READ_EVERY_MS passed since the last read, and the
   * reservation waits for that read (one per interval, shared by concurrent fetches): its
   * visibility, and its maxLease, which cuts every lease asked longer, the worker's own
   * visibility too. A failed read keeps the last values and is reported as a fetch error. A
   * stopping worker waits for the read no longer (a server that accepts connections and never
   * answers would hold it up to the client's timeoutMs): the read goes on, and a failure of it
   * that comes once the worker stops is not reported.
   */
  private leaseMsToAsk(): number | Promise<number> {
    const { options } = this;
    if (this.leaseMsRead !== undefined) return this.leaseMsRead;
    const now = options.clock.now();
    if (now - this.leaseMsReadAt < VISIBILITY_READ_EVERY_MS) return this.leaseMs;
    this.leaseMsReadAt = now;
    const read = this.queue.options().then(
      (queueOptions) => {
        this.leaseMs = options.visibility ?? queueOptions.visibility;
        this.maxLeaseMs = queueOptions.maxLease;
        return this.leaseMs;
      },
      (error: unknown) => {
        if (!this.stopping.signal.aborted) this.reportError(error, 'fetch');
        return this.leaseMs;
      },
    );
    this.leaseMsRead = read;
    const done = () => {
      this.leaseMsRead = undefined;
    };
    read.then(done, done);
    return read;
  }

  private handlerEnded(run: HeldRun): void {
    if (!this.inHand.has(run)) return;
    this.settling.add(run);
    this.wakeFetch();
  }

  private wakeFetch(): void {
    const wake = this.slotFreed;
    this.slotFreed = undefined;
    wake?.();
  }

  private settled(run: HeldRun, record: OutcomeRecord): void {
    this.inHand.delete(run);
    this.settling.delete(run);
    // Stepped by hand (no fetch loop): a stale lease timer must not keep the process alive.
    if (this.loop === undefined && this.inHand.size === 0) this.scheduler.disarmIfEmpty();
    for (const listener of this.listeners.outcome) {
      try {
        listener(record);
      } catch {
        // A listener's failure is its own.
      }
    }
    this.wakeFetch();
  }

  private cancelled(token: number): void {
    for (const run of this.inHand) {
      if (run.token === token) run.loseLease('cancelled');
    }
  }

  private sessionEnded(sessionId: string): void {
    for (const run of [...this.inHand]) {
      if (run.session === sessionId) run.loseLease('session-ended');
    }
  }

  /**
   * Its broker was closed in this process. A fetch under way ends with the close, and the next
   * receive fails with CLOSED, which closes the worker (reported as any failed fetch); with no
   * fetch under way (every slot taken, or waiting to retry) nothing would fail: it closes now.
   */
  private brokerClosed(cause: unknown): void {
    if (this.closing !== undefined) return;
    this.brokerGone = { cause };
    if (!this.loopFetching) this.closeByItself(cause);
  }

  /**
   * Closes the worker as `close()` does, with its default grace period: the handlers running
   * may finish (their acks fail as the broker's calls do), the rest are given back as far as
   * the closed broker allows. A `close({ timeout })` called meanwhile cuts the grace period.
   */
  private closeByItself(cause: unknown): void {
    // Already closing by `close()`: that close goes on as asked.
    if (this.closing !== undefined) return;
    this.closedBy = cause;
    try {
      const { logger } = this.options;
      if (isLevelEnabled(logger, 'error')) {
        logger.error(
          { queue: this.queue.name, error: errorMessage(cause), ...errorCode(cause) },
          'worker closing: its broker was closed',
        );
      }
    } catch {
      // A failing logger must not stop the close.
    }
    this.close().catch(() => undefined);
  }

  private async shutdown(): Promise<void> {
    this.stopping.abort();
    this.wakeFetch();
    // A receive the storage does not answer (a partition: a statement cannot be called back)
    // must not hold close past its timeout and the give-back's second: what it reserves later
    // goes back unrun, or is left to its lease. Each wait below reads the grace period again
    // when a later, shorter close cuts it (a second signal): none waits out the first's timeout.
    const { clock } = this.options;
    const fetched = Promise.all([this.loop, Promise.allSettled([...this.fetches])]);
    // Half of the give-back's second at most past the grace: the other half is the give-back's.
    await this.until(fetched, () => this.graceEndsAt + GIVE_BACK_WAIT_MS / 2);
    await this.until(
      Promise.all([...this.inHand].map((run) => run.done())),
      () => this.graceEndsAt,
    );
    const giveBack = (async () => {
      // Each release puts its job at the front of ready: the last reserved first, so that the
      // jobs go back in the order they were reserved, as leases that end together do (R12).
      const newestFirst = [...this.inHand].sort((a, b) => b.token - a.token);
      await Promise.all(newestFirst.map((run) => run.release()));
      this.keeping.abort();
      await this.session?.close();
    })();
    const givingBackFrom = clock.now();
    await this.until(giveBack, () =>
      Math.max(givingBackFrom + GIVE_BACK_WAIT_MS / 2, this.graceEndsAt + GIVE_BACK_WAIT_MS),
    );
    // The jobs in hand were kept until now: a cancel during the grace period stops its handler
    // at once, as at any other time.
    this.keeping.abort();
    stopQuietly(this.stopWatchingCancels);
    stopQuietly(this.stopWatchingClose);
    this.scheduler.stop();
    this.closed = true;
    for (const listener of this.listeners.closed) {
      try {
        listener(this.closedBy);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  /**
   * Waits until `work` is done or the worker's clock reaches `end()`, read again whenever a later
   * close cuts the grace period: a storage or server that does not answer must not hold `close()`
   * past its timeout by much. What was not given back in time is left to its lease; a failure
   * of `work` is its own.
   */
  private async until(work: Promise<unknown>, end: () => number): Promise<void> {
    const { clock } = this.options;
    let allDone = false;
    const finish = () => {
      allDone = true;
    };
    const done = work.then(finish, finish);
    while (!allDone && clock.now() < end()) {
      const timer = new AbortController();
      this.graceTimer = timer;
      await Promise.race([done, clock.sleep(end() - clock.now(), timer.signal)]);
      timer.abort();
    }
    this.graceTimer = undefined;
  }

  private reportError(error: unknown, during: WorkerErrorSource): void {
    try {
      const { logger } = this.options;
      if (isLevelEnabled(logger, 'error')) {
        logger.error(
          { queue: this.queue.name, during, error: errorMessage(error), ...errorCode(error) },
          `worker ${during} failed`,
        );
      }
    } catch {
      // A failing logger must not stop the worker.
    }
    for (const listener of this.listeners.error) {
      try {
        listener(error, during);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  private checkOpen(): void {
    if (this.closing !== undefined) throw new ClosedError('worker is closed');
  }
}

/**
 * Creates a worker over `queue` and starts it; resolves once it runs. The handler's jobs carry
 * the queue's payload type: `work(broker.queue<Email>('emails'), (job) => send(job.payload))`.
 */
export function work<P = unknown>(
  queue: Queue<P>,
  handler: Handler<P>,
  options?: WorkerOptions,
): Promise<Worker<P>>;
/**
 * Creates a worker over a queue of unknown payloads and starts it: the handler says what the
 * payloads are (`work<Email>(queue, handler)`), a claim nothing checks.
 */
export function work<P = unknown>(
  queue: UntypedQueue,
  handler: Handler<P>,
  options?: WorkerOptions,
): Promise<Worker<P>>;
export async function work<P = unknown>(
  queue: Queue<P> | UntypedQueue,
  handler: Handler<P>,
  options?: WorkerOptions,
): Promise<Worker<P>> {
  const worker = new Worker<P>(queue as Queue<P>, handler, options);
  await worker.start();
  return worker;
}

/**
 * A worker whose leases or backoff the queue would refuse (a server's limits) never works a job:
 * every receive, or every retry, is refused. Refused at start instead, saying which setting.
 */
function checkWithinLimits(
  options: ResolvedWorkerOptions,
  leaseMs: number,
  limits: QueueLimits,
): void {
  // At most once there is no lease and no retry.
  if (options.ack === 'auto') return;
  const { maxVisibilityMs, maxDelayMs } = limits;
  // Every setting above its limit at once, as the options' own problems are listed.
  const issues: string[] = [];
  if (leaseMs > maxVisibilityMs) {
    const whose = options.visibility === undefined ? "the queue's visibility" : 'visibility';
    issues.push(
      `${whose} is ${leaseMs} ms, above the longest lease the queue takes (maxVisibilityMs ${maxVisibilityMs}): every receive would be refused`,
    );
  }
  if (options.backoff.maxDelay > maxDelayMs) {
    issues.push(
      `backoff.maxDelay is ${options.backoff.maxDelay} ms, above the longest delay the queue takes (maxDelayMs ${maxDelayMs}): retries would be refused`,
    );
  }
  if (issues.length > 0) throw new ValidationError(issues);
}

/** The `wait` of `runOnce`'s options (default 0), or a ValidationError naming what is wrong. */
function runOnceWait(options: unknown): number {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(`runOnce: options must be an object, got ${show(options)}`);
  }
  const unknown: string[] = [];
  addUnknownOptions(unknown, Object.keys(options), (name) => name === 'wait');
  if (unknown.length > 0) throw new ValidationError(unknown.map((issue) => `runOnce: ${issue}`));
  const { wait = 0 } = options as { wait?: unknown };
  if (!Number.isSafeInteger(wait) || (wait as number) < 0) {
    throw new ValidationError(`runOnce: wait must be an integer ≥ 0 (ms), got ${show(wait)}`);
  }
  return wait as number;
}

/**
 * Ends a watch the queue began; a removal that throws (a wrapper of a queue of one's own) must
 * not keep the worker from closing, nor a failed start from undoing what it began.
 */
function stopQuietly(stop: (() => void) | undefined): void {
  try {
    stop?.();
  } catch {
    // The queue's failure is its own.
  }
}

/** `queue.closed`; false where it cannot be read (a wrapper of a queue of one's own). */
function closedHere(queue: Queue): boolean {
  try {
    return queue.closed === true;
  } catch {
    return false;
  }
}

/** The queue's maxDeliveries as last read (`initial` at start); `refresh` reads it again. */
function maxDeliveriesOf(queue: Queue, initial: number): QueueLimit {
  const limit: QueueLimit = {
    value: initial,
    refresh: async () => {
      limit.value = (await queue.options()).maxDeliveries;
      return limit.value;
    },
  };
  return limit;
}
