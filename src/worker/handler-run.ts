import type { Queue } from '../broker/queue.js';
import type { Delivery } from '../core/index.js';
import type { AckBatcher } from './ack-batcher.js';
import type { LeaseLossReason } from './errors.js';
import type { Handler, Job, OutcomeRecord } from './job.js';
import { type ContextOwner, RunContext } from './job-context.js';
import type { RenewalConfig, RenewalStep } from './lease-renewer.js';
import type { WorkerMetrics } from './metrics.js';
import type { ResolvedWorkerOptions } from './options.js';
import { logOutcome, outcomeRecord, type Settlement } from './outcome-record.js';

/** A setting of the queue as last read, and a read of it now (which it then keeps). */
export interface QueueLimit {
  value: number;
  refresh(): Promise<number>;
}

/** What every run of one worker shares. */
export interface JobRunDeps {
  queue: Queue;
  /** The queue's name, read once. */
  queueName: string;
  handler: Handler<never>;
  options: ResolvedWorkerOptions;
  metrics: WorkerMetrics;
  /** The queue's maxDeliveries: read at start, and again before a job dies of it. */
  maxDeliveries: QueueLimit;
  /** The longest retry delay the queue takes (ms); Infinity where it has no bound. */
  maxDelay: number;
  /**
   * The longest lease the queue takes (ms; a server's maxVisibilityMs); Infinity where it has no
   * bound. A ctx.extend asking for more asks for this.
   */
  maxVisibility: number;
  renewal: RenewalConfig;
  acks: AckBatcher;
  /** The handler ended and its result decides the job: its settlement (ack, nack) is under way. */
  onHandlerEnded: (run: HeldRun) => void;
  onSettled: (run: HeldRun, record: OutcomeRecord) => void;
  onError: (error: unknown, during: 'renew' | 'settle') => void;
}

/** A job in the worker's hand, settled exactly once: a JobRun, or an AutoAckRun (R22). */
export interface HeldRun {
  readonly token: number;
  /** The worker's session the delivery belongs to, if any. */
  readonly session: string | undefined;
  /**
   * Runs the handler (and keeps the lease, when there is one); false when it did not, its
   * lease having ended before the job came to hand.
   */
  start(): boolean;
  /** Shutdown: the job is given back (or, received at most once, lost); the signal fires. */
  release(): Promise<void>;
  /** The lease is gone: the handler's result will be dropped. */
  loseLease(reason: LeaseLossReason): void;
  /** One renewal step now. */
  renewOnce(): Promise<RenewalStep>;
  /** Resolves with the final outcome. */
  done(): Promise<OutcomeRecord>;
}

/**
 * What a run of the handler on one delivery is, however the job is settled: the handler
 * called once, its result or error handed to the subclass, one claim of the settlement (the
 * first of the handler's end, shutdown or a lost lease wins), the signal made only when the
 * handler reads it, and the outcome recorded, logged and reported once.
 */
export abstract class HandlerRun implements HeldRun, ContextOwner {
  protected abortReason: Error | undefined;
  protected claimed = false;
  protected duplicateMarked = false;
  private controller: AbortController | undefined;
  private handlerRunning = false;
  /** The handler's end was counted (a result may try twice: a thenable calling both callbacks). */
  private handlerOver = false;
  private abandoned = false;
  private lastProgress: unknown;
  private record: OutcomeRecord | undefined;
  private resolveDone: ((record: OutcomeRecord) => void) | undefined;
  private donePromise: Promise<OutcomeRecord> | undefined;

  constructor(
    readonly delivery: Delivery,
    protected readonly receivedAt: number,
    protected readonly deps: JobRunDeps,
  ) {}

  get token(): number {
    return this.delivery.token;
  }

  /** Resolves with the final outcome. */
  done(): Promise<OutcomeRecord> {
    if (this.record !== undefined) return Promise.resolve(this.record);
    this.donePromise ??= new Promise((resolve) => {
      this.resolveDone = resolve;
    });
    return this.donePromise;
  }

  abstract readonly session: string | undefined;
  abstract get leaseDeadline(): number;
  abstract extend(visibility?: number): Promise<number>;
  abstract start(): boolean;
  abstract release(): Promise<void>;
  abstract loseLease(reason: LeaseLossReason): void;
  abstract renewOnce(): Promise<RenewalStep>;

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.abortReason !== undefined) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  progress(info?: unknown): void {
    this.lastProgress = info;
  }

  markDuplicate(): void {
    this.duplicateMarked = true;
  }

  /** The handler returned (or its promise resolved) and its result decides the job. */
  protected abstract handlerReturned(): void;
  /** The handler threw (or its promise rejected) and its error decides the job. */
  protected abstract handlerThrew(error: unknown): void;
  /**
   * The settlement was claimed: by the handler's end (`byHandler`, its result settles the job),
   * or by shutdown or a lost lease (e.g. the lease need not be kept any longer).
   */
  protected claimedHook(_byHandler: boolean): void {}

  /** Calls the handler once; its end goes to handlerReturned or handlerThrew if still unclaimed. */
  protected runHandler(): void {
    this.handlerRunning = true;
    const { id, payload, token, deliveryCount, redelivered, deadline } = this.delivery;
    const job: Job<unknown> = Object.freeze({
      id,
      payload,
      token,
      deliveryCount,
      redelivered,
      deadline,
    });
    const ctx = new RunContext(this, id, payload, token, deliveryCount, redelivered);
    try {
      const result = (this.deps.handler as Handler<unknown>)(job, ctx);
      if (isThenable(result)) {
        // A thenable whose `then` throws is a rejection, as `await` takes it.
        result.then(
          () => this.handlerSettled(false),
          (error: unknown) => this.handlerSettled(true, error),
        );
        return;
      }
    } catch (error) {
      this.handlerSettled(true, error);
      return;
    }
    this.handlerSettled(false);
  }

  /** The handler's end: counted once, as a promise settles once, however its result behaves. */
  private handlerSettled(threw: boolean, error?: unknown): void {
    if (this.handlerOver) return;
    this.handlerOver = true;
    if (!this.handlerEnded()) return;
    if (threw) this.handlerThrew(error);
    else this.handlerReturned();
  }

  /** Fires the handler's signal (now, or when it is first read). */
  protected abort(reason: Error): void {
    this.abortReason = reason;
    this.controller?.abort(reason);
  }

  /**
   * Takes the settlement (`byHandler`: for the handler's result); false when something else
   * already did.
   */
  protected claim(byHandler = false): boolean {
    if (this.claimed) return false;
    this.claimed = true;
    this.claimedHook(byHandler);
    if (this.handlerRunning) {
      this.abandoned = true;
      this.deps.metrics.abandonedHandlers += 1;
    }
    return true;
  }

  protected finish(settlement: Settlement): void {
    const durationMs = Math.max(0, this.deps.options.clock.now() - this.receivedAt);
    const record = outcomeRecord(this.deps.queueName, this.delivery, settlement, durationMs);
    this.record = record;
    const dead = record.outcome === 'dead' || record.outcome === 'ambiguous';
    this.deps.metrics.recordOutcome(record.outcome, durationMs, dead ? record.reason : undefined);
    logOutcome(this.deps.options.logger, record, this.lastProgress);
    this.deps.onSettled(this, record);
    this.resolveDone?.(record);
  }

  /** The handler is done; true when its result still decides the job. */
  private handlerEnded(): boolean {
    this.handlerRunning = false;
    if (this.abandoned) this.deps.metrics.abandonedHandlers -= 1;
    if (!this.claim(true)) return false;
    this.deps.onHandlerEnded(this);
    return true;
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
