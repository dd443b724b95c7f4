import { ManualClock } from '../broker/clock.js';
import type { Broker, Queue } from '../broker/queue.js';
import { addUnknownOptions } from '../core/errors.js';
import { type QueueOptions, ValidationError } from '../core/index.js';
import { show } from '../core/validate.js';
import { open } from '../open.js';
import type { Handler, OutcomeRecord } from '../worker/job.js';
import { type Logger, silentLogger } from '../worker/logger.js';
import type { WorkerOptions } from '../worker/options.js';
import { Worker } from '../worker/worker.js';
import { FaultyQueue } from './faulty-queue.js';

/** What `Harness.open` takes. */
export interface HarnessOptions {
  /** The storage (see `open`). Default 'memory:'. */
  url?: string;
  /** The queue's name. Default 'jobs'. */
  queue?: string;
  /** The queue's options (ms). */
  queueOptions?: QueueOptions;
  /** The time everything starts at, ms. Default 0. */
  start?: number;
  /** The processes' logger. Default silent. */
  logger?: Logger;
  /**
   * How to reach the queue, given the harness's clock; overrides `url`. E.g. a remote broker
   * in front of a server whose broker runs on that clock.
   */
  connect?: (clock: ManualClock) => Promise<Broker>;
}

/** What the harness does with each of its processes, whatever their payload type. */
type Followed = Pick<TestProcess, 'faults' | 'follow'> & {
  readonly worker: Pick<Worker, 'close'>;
};

/**
 * A broker on a manual clock and any number of simulated consumer processes, each a Worker
 * over its own FaultyQueue with its own clock. Time moves only through `advance`; a paused or
 * crashed process's clock stays behind, as its timers would. `P` is the type of the queue's
 * payloads (`Harness.open<P>()`), a claim as `Queue<P>`'s is; unknown by default.
 */
export class Harness<P = unknown> {
  private readonly processes: Followed[] = [];

  private constructor(
    /** The broker, on the harness's clock. */
    readonly broker: Broker,
    /** The queue the processes work on. */
    readonly queue: Queue<P>,
    /** The harness's clock: time moves only through `advance`. */
    readonly clock: ManualClock,
    private readonly logger: Logger,
  ) {}

  /** A harness over a new broker and its queue, on a manual clock at `start` (default 0). */
  static async open<P = unknown>(options: HarnessOptions = {}): Promise<Harness<P>> {
    checkOpenOptions(options);
    const clock = new ManualClock(options.start ?? 0);
    const broker =
      options.connect === undefined
        ? await open(options.url ?? 'memory:', { clock })
        : await options.connect(clock);
    let queue: Queue<P>;
    try {
      queue = await broker.queue<P>(options.queue ?? 'jobs', options.queueOptions);
    } catch (error) {
      // Refused queue options leave no broker open (a SQLite file held) behind the error.
      await broker.close().catch(() => undefined);
      throw error;
    }
    return new Harness(broker, queue, clock, options.logger ?? silentLogger);
  }

  /**
   * A new consumer process running `handler` (not started: call `worker.start()` or
   * `runOnce()`). `Q`, the payloads' type its handler sees, is the harness's unless given.
   */
  process<Q = P>(handler: Handler<Q>, options: WorkerOptions = {}): TestProcess<Q> {
    const consumer = new TestProcess<Q>(this.queue, this.clock, handler, {
      logger: this.logger,
      ...options,
    });
    this.processes.push(consumer);
    return consumer;
  }

  /**
   * Moves time forward by `ms`, in steps of `step` ms (default all at once). After each step
   * every running process's clock follows, and everything that became due runs to completion.
   */
  async advance(
    ms: number,
    options: {
      /** Milliseconds per step. Default `ms`: all at once. */
      step?: number;
    } = {},
  ): Promise<void> {
    checkAdvance(ms, options, this.clock.now());
    const step = options.step ?? Math.max(1, ms);
    let left = ms;
    do {
      // What is under way finishes first, at the old time (a receive about to park, parks).
      await this.flush();
      const move = Math.min(step, left);
      left -= move;
      const time = this.clock.now() + move;
      // Every clock at once: a job the step hands to a waiting process (a lease ran out
      // elsewhere) is timed there from the step's time, as the queue timed its lease.
      this.clock.set(time);
      for (const consumer of this.processes) consumer.follow(time);
      await this.flush();
    } while (left > 0);
  }

  /** Lets every pending promise chain run (no time passes). */
  async flush(): Promise<void> {
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
  }

  /** Closes the live processes (releasing their jobs at once) and the broker. */
  async close(): Promise<void> {
    for (const consumer of this.processes) {
      if (!consumer.faults.crashed) await consumer.worker.close({ timeout: 0 });
    }
    await this.broker.close();
  }
}

/** One simulated consumer process: a worker, its faulty queue, its clock, its outcomes. */
export class TestProcess<P = unknown> {
  /** The process's worker. */
  readonly worker: Worker<P>;
  /** The process's clock: it follows the harness's unless the process is paused or crashed. */
  readonly clock: ManualClock;
  /** The queue as the process reaches it, faults injected there. */
  readonly faults: FaultyQueue<P>;
  /** Every final outcome, in order. */
  readonly outcomes: OutcomeRecord[] = [];
  private taken = 0;
  private waiters: (() => void)[] = [];
  private paused = false;

  constructor(
    queue: Queue,
    private readonly brokerClock: ManualClock,
    handler: Handler<P>,
    options: WorkerOptions,
  ) {
    this.clock = new ManualClock(brokerClock.now());
    // Its payloads are what the handler says they are (see `Harness.process`).
    this.faults = new FaultyQueue(queue as Queue<P>, () => {
      this.paused = true;
    });
    this.worker = new Worker(this.faults, handler, { clock: this.clock, ...options });
    this.worker.on('outcome', (record) => {
      this.outcomes.push(record);
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  /** The next outcome not yet taken by an earlier call, waiting for it if needed. */
  async nextOutcome(): Promise<OutcomeRecord> {
    while (this.outcomes.length <= this.taken) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    const record = this.outcomes[this.taken] as OutcomeRecord;
    this.taken += 1;
    return record;
  }

  /**
   * The process stalls (a long GC pause, SIGSTOP): its clock stops, so its renewals and
   * timeouts do not fire while the broker's time goes on.
   */
  pause(): void {
    this.paused = true;
  }

  /** The process runs again: its clock jumps to the broker's time and overdue timers fire. */
  resume(): void {
    if (this.faults.crashed) return;
    this.paused = false;
    this.follow(this.brokerClock.now());
  }

  /** The process dies: no more calls, no more timers, nothing settled. */
  crash(): void {
    this.faults.crash();
  }

  /**
   * Called by the harness when time moves: the clock follows unless the process is paused.
   * @internal
   */
  follow(time: number): void {
    if (!this.paused && time > this.clock.now()) this.clock.set(time);
  }
}

const OPEN_OPTIONS = new Set(['url', 'queue', 'queueOptions', 'start', 'logger', 'connect']);

/** Refused before a broker is opened: a bad start would leave every clock of the run broken. */
function checkOpenOptions(options: unknown): asserts options is HarnessOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(`Harness.open: options must be an object, got ${show(options)}`);
  }
  const issues: string[] = [];
  addUnknownOptions(issues, Object.keys(options), (name) => OPEN_OPTIONS.has(name));
  const { start, connect } = options as Record<string, unknown>;
  if (start !== undefined && !isTime(start)) {
    issues.push(`start must be an integer ≥ 0 (ms), got ${show(start)}`);
  }
  if (connect !== undefined && typeof connect !== 'function') {
    issues.push(`connect must be a function, got ${show(connect)}`);
  }
  if (issues.length > 0) throw new ValidationError(issues.map((i) => `Harness.open: ${i}`));
}

/**
 * Refused before time moves: NaN, Infinity or a fraction would be set on every clock, and the
 * broker would then refuse each call (its times are whole milliseconds).
 */
function checkAdvance(ms: unknown, options: unknown, now: number): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(`advance: options must be an object, got ${show(options)}`);
  }
  const issues: string[] = [];
  if (!isTime(ms)) issues.push(`ms must be an integer ≥ 0, got ${show(ms)}`);
  else if (!isTime(now + ms)) issues.push(`ms must keep the time a safe integer, got ${ms}`);
  addUnknownOptions(issues, Object.keys(options), (name) => name === 'step');
  const { step } = options as { step?: unknown };
  if (step !== undefined && !(isTime(step) && step > 0)) {
    issues.push(`step must be a positive integer (ms), got ${show(step)}`);
  }
  if (issues.length > 0) throw new ValidationError(issues.map((i) => `advance: ${i}`));
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
