import type { Queue } from '../broker/queue.js';
import { type Delivery, ValidationError } from '../core/index.js';
import type { AckBatcher, AckWaiter } from './ack-batcher.js';
import {
  errorMessage,
  type LeaseLossReason,
  LeaseLostError,
  WorkerClosingError,
} from './errors.js';
import type { Handler, Job, OutcomeRecord } from './job.js';
import { type ContextOwner, RunContext } from './job-context.js';
import {
  type LeaseHolder,
  LeaseRenewer,
  type RenewalConfig,
  type RenewalStep,
} from './lease-renewer.js';
import type { WorkerMetrics } from './metrics.js';
import type { ResolvedWorkerOptions } from './options.js';
import { applyDecision, decide, release } from './outcome.js';
import {
  ACKED,
  DUPLICATE,
  logOutcome,
  outcomeRecord,
  type Settlement,
  settlementOf,
  withoutDelay,
} from './outcome-record.js';

/** What every run of one worker shares. */
export interface JobRunDeps {
  queue: Queue;
  /** The queue's name, read once. */
  queueName: string;
  handler: Handler<never>;
  options: ResolvedWorkerOptions;
  metrics: WorkerMetrics;
  /** The queue's maxDeliveries, read at start. */
  maxDeliveries: number;
  /** The lease length of each reservation and renewal, ms. */
  leaseMs: number;
  renewal: RenewalConfig;
  acks: AckBatcher;
  onSettled: (run: HeldRun, record: OutcomeRecord) => void;
  onError: (error: unknown, during: 'renew' | 'settle') => void;
}

/** A job in the worker's hand, settled exactly once: a JobRun, or an AutoAckRun (R22). */
export interface HeldRun {
  readonly token: number;
  /** The worker's session the delivery belongs to, if any. */
  readonly session: string | undefined;
  /** Runs the handler (and keeps the lease, when there is one). */
  start(): void;
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
 * One delivery in the worker's hand: runs the handler under a kept lease and settles the job
 * exactly once — by the handler's result, by shutdown (release) or by losing the lease. The
 * first of these claims the settlement; the others are dropped. The common path (the handler
 * returns, the ack lands) allocates no signal, timer or promise of its own: the signal is made
 * when the handler reads it, the lease is kept by the worker's one timer, the ack goes out
 * with the others of its tick.
 */
export class JobRun implements HeldRun, AckWaiter, LeaseHolder, ContextOwner {
  private readonly renewer: LeaseRenewer;
  private controller: AbortController | undefined;
  private abortReason: Error | undefined;
  private claimed = false;
  private handlerRunning = false;
  private abandoned = false;
  private duplicateMarked = false;
  private lastProgress: unknown;
  private ackSettlement: Settlement = ACKED;
  private record: OutcomeRecord | undefined;
  private resolveDone: ((record: OutcomeRecord) => void) | undefined;
  private donePromise: Promise<OutcomeRecord> | undefined;

  constructor(
    readonly delivery: Delivery,
    private readonly receivedAt: number,
    readonly session: string | undefined,
    private readonly deps: JobRunDeps,
  ) {
    this.renewer = new LeaseRenewer(
      deps.renewal,
      this,
      delivery.token,
      delivery.deadline,
      receivedAt + deps.leaseMs,
    );
  }

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

  /** Starts the lease keeping and the handler. */
  start(): void {
    this.renewer.start();
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

  /** One renewal step now (see LeaseRenewer.runOnce). */
  renewOnce() {
    return this.renewer.runOnce();
  }

  /** Shutdown: gives the job back for immediate redelivery and fires the handler's signal. */
  async release(): Promise<void> {
    if (!this.claim()) {
      // Settled or settling another way: wait until that has landed.
      await this.done();
      return;
    }
    this.abort(new WorkerClosingError(`worker closing: job ${this.delivery.id} released`));
    await this.settleBy(() => release(this.deps.queue, this.token), 'stale-nack', {
      outcome: 'released',
      reason: 'shutdown',
    });
  }

  /** The lease is gone (expired, refused, session ended): the result will be dropped. */
  loseLease(reason: LeaseLossReason): void {
    if (!this.claim()) return;
    this.abort(new LeaseLostError(reason, this.delivery.id, this.token));
    this.finish({ outcome: 'lease-lost', reason });
  }

  // ContextOwner: what the handler's context reads and calls.

  get leaseDeadline(): number {
    return this.renewer.currentDeadline;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.abortReason !== undefined) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  async extend(visibility: number = this.deps.leaseMs): Promise<number> {
    if (!Number.isSafeInteger(visibility) || visibility <= 0) {
      throw new ValidationError(
        `extend: visibility must be a positive integer (ms), got ${visibility}`,
      );
    }
    const lost = () => new LeaseLostError('renewal-refused', this.delivery.id, this.token);
    if (this.claimed) throw this.abortReason ?? lost();
    const deadline = await this.renewer.extend(visibility);
    if (deadline === null) throw this.abortReason ?? lost();
    return deadline;
  }

  progress(info?: unknown): void {
    this.lastProgress = info;
    this.renewer.progress();
  }

  markDuplicate(): void {
    this.duplicateMarked = true;
  }

  // LeaseHolder: what the renewer reports.

  leaseRenewed(): void {
    this.deps.metrics.renewals += 1;
  }

  leaseRenewalFailed(error: unknown): void {
    this.deps.metrics.renewalErrors += 1;
    this.deps.onError(error, 'renew');
  }

  leaseLost(reason: LeaseLossReason): void {
    this.loseLease(reason);
  }

  // AckWaiter: the answer of the coalesced ack.

  ackAnswered(acked: boolean): void {
    if (acked) {
      this.finish(this.ackSettlement);
      return;
    }
    this.deps.metrics.staleAcks += 1;
    this.finish({
      ...withoutDelay(this.ackSettlement),
      outcome: 'lease-lost',
      reason: 'stale-ack',
    });
  }

  ackFailed(error: unknown): void {
    this.settleFailed(this.ackSettlement, error);
  }

  private handlerReturned(): void {
    if (!this.handlerEnded()) return;
    this.ackSettlement = this.duplicateMarked ? DUPLICATE : ACKED;
    this.deps.acks.add(this);
  }

  private handlerThrew(error: unknown): void {
    if (!this.handlerEnded()) return;
    const { id, deliveryCount } = this.delivery;
    const decision = decide(
      { status: 'threw', error },
      {
        id,
        deliveryCount,
        maxDeliveries: this.deps.maxDeliveries,
        backoff: this.deps.options.backoff,
      },
    );
    if (decision.action === 'ack') {
      this.ackSettlement = settlementOf(decision);
      this.deps.acks.add(this);
      return;
    }
    this.deps.metrics.lastError = { id, token: this.token, message: decision.error };
    void this.settleBy(
      () => applyDecision(this.deps.queue, this.token, decision),
      'stale-nack',
      settlementOf(decision),
    );
  }

  /** The handler is done; true when its result still decides the job. */
  private handlerEnded(): boolean {
    this.handlerRunning = false;
    if (this.abandoned) this.deps.metrics.abandonedHandlers -= 1;
    return this.claim();
  }

  private async settleBy(
    call: () => Promise<boolean>,
    stale: 'stale-ack' | 'stale-nack',
    settlement: Settlement,
  ): Promise<void> {
    let settled: boolean;
    try {
      settled = await call();
    } catch (error) {
      return this.settleFailed(settlement, error);
    }
    if (!settled) {
      if (stale === 'stale-ack') this.deps.metrics.staleAcks += 1;
      else this.deps.metrics.staleNacks += 1;
      return this.finish({ ...withoutDelay(settlement), outcome: 'lease-lost', reason: stale });
    }
    this.finish(settlement);
  }

  private settleFailed(settlement: Settlement, error: unknown): void {
    this.deps.metrics.settleErrors += 1;
    this.deps.onError(error, 'settle');
    const failure = `${settlement.outcome} not settled: ${errorMessage(error)}`;
    this.finish({ outcome: 'lease-lost', reason: 'settle-failed', error: failure });
  }

  private abort(reason: Error): void {
    this.abortReason = reason;
    this.controller?.abort(reason);
  }

  private claim(): boolean {
    if (this.claimed) return false;
    this.claimed = true;
    this.renewer.stop();
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
    const dead = record.outcome === 'dead' || record.outcome === 'ambiguous';
    this.deps.metrics.recordOutcome(record.outcome, durationMs, dead ? record.reason : undefined);
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
