import type { Delivery } from '../core/index.js';
import {
  DuplicateError,
  errorMessage,
  type LeaseLossReason,
  LeaseLostError,
  WorkerClosingError,
} from './errors.js';
import type { Handler, Job, OutcomeRecord } from './job.js';
import { type ContextOwner, RunContext } from './job-context.js';
import type { HeldRun, JobRunDeps } from './job-run.js';
import type { RenewalStep } from './lease-renewer.js';
import { ACKED, DUPLICATE, logOutcome, outcomeRecord, type Settlement } from './outcome-record.js';

/**
 * One job received at most once (`ack: 'auto'`, R22): the queue removed it as it handed it
 * out, so there is no lease to keep and nothing to ack or nack. The handler runs; returning is
 * `acked` (or `duplicate`), throwing is `lost` — reported (the outcome's error log line, the
 * 'outcome' event, `metrics().lastError`) and never retried. Shutdown cannot give the job back:
 * a handler still running when the close timeout passes has its signal fired and the job is
 * `lost` (reason `shutdown`).
 */
export class AutoAckRun implements HeldRun, ContextOwner {
  /** Never under the worker's session: an auto-acked delivery holds no lease there (R22). */
  readonly session = undefined;
  private controller: AbortController | undefined;
  private abortReason: Error | undefined;
  private claimed = false;
  private handlerRunning = false;
  private abandoned = false;
  private duplicateMarked = false;
  private lastProgress: unknown;
  private record: OutcomeRecord | undefined;
  private resolveDone: ((record: OutcomeRecord) => void) | undefined;
  private donePromise: Promise<OutcomeRecord> | undefined;

  constructor(
    readonly delivery: Delivery,
    private readonly receivedAt: number,
    private readonly deps: JobRunDeps,
  ) {}

  get token(): number {
    return this.delivery.token;
  }

  done(): Promise<OutcomeRecord> {
    if (this.record !== undefined) return Promise.resolve(this.record);
    this.donePromise ??= new Promise((resolve) => {
      this.resolveDone = resolve;
    });
    return this.donePromise;
  }

  start(): void {
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
    let result: unknown;
    try {
      result = (this.deps.handler as Handler<unknown>)(job, ctx);
    } catch (error) {
      this.handlerThrew(error);
      return;
    }
    if (isThenable(result)) {
      result.then(
        () => this.handlerReturned(),
        (error: unknown) => this.handlerThrew(error),
      );
    } else {
      this.handlerReturned();
    }
  }

  /** Shutdown gave up on the handler: the job cannot go back, it is lost. */
  async release(): Promise<void> {
    if (!this.claim()) {
      await this.done();
      return;
    }
    const reason = new WorkerClosingError(
      `worker closing: job ${this.delivery.id} was received at most once and is lost`,
    );
    this.abortReason = reason;
    this.controller?.abort(reason);
    this.finish({ outcome: 'lost', reason: 'shutdown' });
  }

  /** No lease, so none to lose: a session's end or a cancel does not concern this job. */
  loseLease(_reason: LeaseLossReason): void {}

  /** No lease, so nothing to renew. */
  renewOnce(): Promise<RenewalStep> {
    return Promise.resolve('stopped');
  }

  // ContextOwner

  get leaseDeadline(): number {
    return this.delivery.deadline;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.abortReason !== undefined) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  extend(): Promise<number> {
    return Promise.reject(new LeaseLostError('auto-ack', this.delivery.id, this.token));
  }

  progress(info?: unknown): void {
    this.lastProgress = info;
  }

  markDuplicate(): void {
    this.duplicateMarked = true;
  }

  private handlerReturned(): void {
    if (!this.handlerEnded()) return;
    this.finish(this.duplicateMarked ? DUPLICATE : ACKED);
  }

  private handlerThrew(error: unknown): void {
    if (!this.handlerEnded()) return;
    if (error instanceof DuplicateError) {
      this.finish({ ...DUPLICATE, reason: errorMessage(error) });
      return;
    }
    const message = errorMessage(error);
    this.deps.metrics.lastError = { id: this.delivery.id, token: this.token, message };
    this.finish({ outcome: 'lost', reason: 'handler-error', error: message });
  }

  /** The handler is done; true when its result still decides the outcome. */
  private handlerEnded(): boolean {
    this.handlerRunning = false;
    if (this.abandoned) this.deps.metrics.abandonedHandlers -= 1;
    return this.claim();
  }

  private claim(): boolean {
    if (this.claimed) return false;
    this.claimed = true;
    if (this.handlerRunning) {
      this.abandoned = true;
      this.deps.metrics.abandonedHandlers += 1;
    }
    return true;
  }

  private finish(settlement: Settlement): void {
    const durationMs = Math.max(0, this.deps.options.clock.now() - this.receivedAt);
    const record = outcomeRecord(this.deps.queueName, this.delivery, settlement, durationMs);
    this.record = record;
    this.deps.metrics.recordOutcome(record.outcome, durationMs);
    logOutcome(this.deps.options.logger, record, this.lastProgress);
    this.deps.onSettled(this, record);
    this.resolveDone?.(record);
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
