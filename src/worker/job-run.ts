import type { Clock } from '../broker/clock.js';
import type { Queue } from '../broker/queue.js';
import { type Delivery, ValidationError } from '../core/index.js';
import {
  errorMessage,
  type LeaseLossReason,
  LeaseLostError,
  WorkerClosingError,
} from './errors.js';
import type { Handler, Job, JobContext, OutcomeRecord } from './job.js';
import { LeaseRenewer } from './lease-renewer.js';
import type { Logger } from './logger.js';
import type { WorkerMetrics } from './metrics.js';
import type { ResolvedWorkerOptions } from './options.js';
import { applyDecision, type Decision, decide, type OutcomeKind, release } from './outcome.js';

export interface JobRunDeps {
  queue: Queue;
  handler: Handler<never>;
  options: ResolvedWorkerOptions;
  metrics: WorkerMetrics;
  /** The queue's maxDeliveries, read at start. */
  maxDeliveries: number;
  /** The lease length of each reservation and renewal, ms. */
  leaseMs: number;
  /** The consumer session the delivery belongs to, if any. */
  session: string | undefined;
  onSettled: (run: JobRun, record: OutcomeRecord) => void;
  onError: (error: unknown, during: 'renew' | 'settle') => void;
}

type Settlement = Omit<OutcomeRecord, 'queue' | 'id' | 'token' | 'deliveryCount' | 'durationMs'>;

const LOG_LEVEL: Record<OutcomeKind, keyof Logger> = {
  acked: 'info',
  duplicate: 'info',
  retried: 'warn',
  released: 'warn',
  'lease-lost': 'warn',
  dead: 'error',
  ambiguous: 'error',
};

/**
 * One delivery in the worker's hand: runs the handler under a kept lease and settles the job
 * exactly once — by the handler's result, by shutdown (release) or by losing the lease. The
 * first of these claims the settlement; the others are dropped.
 */
export class JobRun {
  readonly done: Promise<OutcomeRecord>;
  private resolveDone: (record: OutcomeRecord) => void = () => {};
  private readonly abort = new AbortController();
  private readonly renewer: LeaseRenewer;
  private readonly startedAt: number;
  private claimed = false;
  private handlerRunning = false;
  private abandoned = false;
  private duplicateMarked = false;
  private lastProgress: unknown;

  constructor(
    readonly delivery: Delivery,
    receivedAt: number,
    private readonly deps: JobRunDeps,
  ) {
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve;
    });
    this.startedAt = receivedAt;
    const { options } = deps;
    this.renewer = new LeaseRenewer({
      queue: deps.queue,
      clock: options.clock,
      token: delivery.token,
      deadline: delivery.deadline,
      localDeadline: receivedAt + deps.leaseMs,
      leaseMs: deps.leaseMs,
      policy: options.renew,
      renewAt: options.renewAt,
      maxRenewals: options.maxRenewals,
      onRenewed: () => {
        deps.metrics.renewals += 1;
      },
      onRenewError: (error) => {
        deps.metrics.renewalErrors += 1;
        deps.onError(error, 'renew');
      },
      onLost: (reason) => this.loseLease(reason),
    });
  }

  get token(): number {
    return this.delivery.token;
  }

  get session(): string | undefined {
    return this.deps.session;
  }

  /** Starts the handler and the lease keeping. */
  start(): void {
    this.renewer.run().catch((error) => this.deps.onError(error, 'renew'));
    void this.execute();
  }

  /** One renewal step now (see LeaseRenewer.runOnce). */
  renewOnce() {
    return this.renewer.runOnce();
  }

  /** Shutdown: gives the job back for immediate redelivery and fires the handler's signal. */
  async release(): Promise<void> {
    if (!this.claim()) {
      // Settled or settling another way: wait until that has landed.
      await this.done;
      return;
    }
    this.abort.abort(new WorkerClosingError(`worker closing: job ${this.delivery.id} released`));
    await this.settleBy(() => release(this.deps.queue, this.token), 'stale-nack', {
      outcome: 'released',
      reason: 'shutdown',
    });
  }

  /** The lease is gone (expired, refused, session ended): the result will be dropped. */
  loseLease(reason: LeaseLossReason): void {
    if (!this.claim()) return;
    this.abort.abort(new LeaseLostError(reason, this.delivery.id, this.token));
    this.finish({ outcome: 'lease-lost', reason });
  }

  private get clock(): Clock {
    return this.deps.options.clock;
  }

  private async execute(): Promise<void> {
    const { handler } = this.deps;
    this.handlerRunning = true;
    let result: Parameters<typeof decide>[0];
    try {
      await (handler as Handler<unknown>)(this.job(), this.context());
      result = { status: 'returned', duplicate: this.duplicateMarked };
    } catch (error) {
      result = { status: 'threw', error };
    }
    this.handlerRunning = false;
    if (this.abandoned) this.deps.metrics.abandonedHandlers -= 1;
    if (!this.claim()) return;
    const { id, deliveryCount } = this.delivery;
    const decision = decide(result, {
      id,
      deliveryCount,
      maxDeliveries: this.deps.maxDeliveries,
      backoff: this.deps.options.backoff,
    });
    if (decision.action !== 'ack') {
      this.deps.metrics.lastError = { id, token: this.token, message: decision.error };
    }
    await this.settleBy(
      () => applyDecision(this.deps.queue, this.token, decision),
      decision.action === 'ack' ? 'stale-ack' : 'stale-nack',
      settlementOf(decision),
    );
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
      this.deps.metrics.settleErrors += 1;
      this.deps.onError(error, 'settle');
      const failure = `${settlement.outcome} not settled: ${errorMessage(error)}`;
      return this.finish({ outcome: 'lease-lost', reason: 'settle-failed', error: failure });
    }
    if (!settled) {
      if (stale === 'stale-ack') this.deps.metrics.staleAcks += 1;
      else this.deps.metrics.staleNacks += 1;
      return this.finish({ ...withoutDelay(settlement), outcome: 'lease-lost', reason: stale });
    }
    this.finish(settlement);
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
    const { id, token, deliveryCount } = this.delivery;
    const record: OutcomeRecord = {
      queue: this.deps.queue.name,
      id,
      token,
      deliveryCount,
      ...settlement,
      durationMs: Math.max(0, this.clock.now() - this.startedAt),
    };
    const dead = record.outcome === 'dead' || record.outcome === 'ambiguous';
    this.deps.metrics.recordOutcome(
      record.outcome,
      record.durationMs,
      dead ? record.reason : undefined,
    );
    const fields: Record<string, unknown> = { ...record };
    if (record.outcome === 'lease-lost' && this.lastProgress !== undefined) {
      fields.progress = this.lastProgress;
    }
    try {
      this.deps.options.logger[LOG_LEVEL[record.outcome]](fields, `job ${record.outcome}`);
    } catch {
      // A failing logger must not leave a job unsettled.
    }
    this.deps.onSettled(this, record);
    this.resolveDone(record);
  }

  private job(): Job<unknown> {
    const { id, payload, token, deliveryCount, redelivered, deadline } = this.delivery;
    return Object.freeze({ id, payload, token, deliveryCount, redelivered, deadline });
  }

  private context(): JobContext<unknown> {
    const run = this;
    const { id, payload, token, deliveryCount, redelivered } = this.delivery;
    return {
      id,
      payload,
      token,
      deliveryCount,
      redelivered,
      get deadline() {
        return run.renewer.currentDeadline;
      },
      signal: this.abort.signal,
      extend: (visibility = this.deps.leaseMs) => this.extend(visibility),
      progress: (info?: unknown) => {
        this.lastProgress = info;
        this.renewer.progress();
      },
      duplicate: () => {
        this.duplicateMarked = true;
      },
    };
  }

  private async extend(visibility: number): Promise<number> {
    if (!Number.isSafeInteger(visibility) || visibility <= 0) {
      throw new ValidationError(
        `extend: visibility must be a positive integer (ms), got ${visibility}`,
      );
    }
    const lost = () => new LeaseLostError('renewal-refused', this.delivery.id, this.token);
    if (this.claimed) throw this.abort.signal.reason ?? lost();
    const deadline = await this.renewer.extend(visibility);
    if (deadline === null) throw this.abort.signal.reason ?? lost();
    return deadline;
  }
}

function settlementOf(decision: Decision): Settlement {
  const settlement: Settlement = { outcome: decision.kind };
  if (decision.reason !== undefined) settlement.reason = decision.reason;
  if (decision.action !== 'ack') settlement.error = decision.error;
  if (decision.action === 'retry') settlement.delay = decision.delay;
  return settlement;
}

function withoutDelay(settlement: Settlement): Settlement {
  const { delay: _delay, ...rest } = settlement;
  return rest;
}
