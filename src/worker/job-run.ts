import { leaseAge } from '../broker/lease-age.js';
import { type Delivery, NotFoundError, ValidationError } from '../core/index.js';
import { show } from '../core/validate.js';
import type { AckWaiter } from './ack-batcher.js';
import {
  errorMessage,
  type LeaseLossReason,
  LeaseLostError,
  WorkerClosingError,
} from './errors.js';
import { HandlerRun, type JobRunDeps } from './handler-run.js';
import { type LeaseHolder, LeaseRenewer } from './lease-renewer.js';
import { applyDecision, type Decision, decide, release } from './outcome.js';
import { ACKED, DUPLICATE, type Settlement, settlementOf, withoutDelay } from './outcome-record.js';

export type { HeldRun, JobRunDeps } from './handler-run.js';

/**
 * One delivery in the worker's hand: runs the handler under a kept lease and settles the job
 * exactly once — by the handler's result, by shutdown (release) or by losing the lease. The
 * first of these claims the settlement; the others are dropped. The common path (the handler
 * returns, the ack lands) allocates no signal, timer or promise of its own: the signal is made
 * when the handler reads it, the lease is kept by the worker's one timer, the ack goes out
 * with the others of its tick.
 */
export class JobRun extends HandlerRun implements AckWaiter, LeaseHolder {
  private readonly renewer: LeaseRenewer;
  private ackSettlement: Settlement = ACKED;
  /** Whether the handler was started: one never started goes back unworked (R33). */
  private started = false;

  constructor(
    delivery: Delivery,
    receivedAt: number,
    readonly session: string | undefined,
    deps: JobRunDeps,
    /** The lease length its reservation asked for: what renewals ask for again. */
    private readonly leaseMs: number,
  ) {
    super(delivery, receivedAt, deps);
    this.renewer = new LeaseRenewer(
      leaseMs === deps.renewal.leaseMs ? deps.renewal : { ...deps.renewal, leaseMs },
      this,
      delivery.token,
      delivery.deadline,
      // A lease that ran while its delivery waited in a client's buffer ends that much sooner.
      receivedAt + leaseMs - leaseAge(delivery),
    );
  }

  /** Starts the lease keeping and the handler. */
  start(): boolean {
    // Lost while it waited to start (cancelled, or its session ended, as the loop turned between
    // the jobs of one receive): the job is no longer this worker's to run.
    if (this.claimed) return false;
    // Answered after its lease had ended (a storage or server that answered late): another
    // consumer may hold the job by now, so its handler does not run beside that one.
    if (this.renewer.expiresAt <= this.deps.renewal.clock.now()) {
      this.loseLease('expired');
      return false;
    }
    this.started = true;
    this.renewer.start();
    this.runHandler();
    return true;
  }

  /** One renewal step now (see LeaseRenewer.runOnce). */
  renewOnce() {
    return this.renewer.runOnce();
  }

  /** Shutdown: gives the job back for immediate redelivery and fires the handler's signal. */
  async release(): Promise<void> {
    if (!this.claim()) {
      // Settled or settling another way: wait until that has landed. A settlement still waiting
      // for the handler's extensions goes now: the close's grace period is over, and the worker
      // stops keeping the lease once closed, so the job would be neither settled nor released.
      this.renewer.settleNow();
      await this.done();
      return;
    }
    this.abort(new WorkerClosingError(`worker closing: job ${this.delivery.id} released`));
    await this.settleBy(() => release(this.deps.queue, this.token, this.started), 'stale-nack', {
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

  async extend(visibility: number = this.leaseMs): Promise<number> {
    if (!Number.isSafeInteger(visibility) || visibility <= 0) {
      // Shown as the other options are: a Symbol would make the message itself throw.
      throw new ValidationError(
        `extend: visibility must be a positive integer (ms), got ${show(visibility)}`,
      );
    }
    const lost = () => new LeaseLostError('renewal-refused', this.delivery.id, this.token);
    if (this.claimed) throw this.abortReason ?? lost();
    // Longer than the queue takes (a server's maxVisibilityMs), it would be refused, and the
    // lease left as it was: the longest it takes is the nearest to the ask, as a maxLease cuts it.
    const deadline = await this.renewer.extend(Math.min(visibility, this.deps.maxVisibility));
    if (deadline === null) throw this.abortReason ?? lost();
    return deadline;
  }

  override progress(info?: unknown): void {
    super.progress(info);
    this.renewer.progress();
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

  protected handlerReturned(): void {
    this.ackSettlement = this.duplicateMarked ? DUPLICATE : ACKED;
    // Checked first: the common path (no extension on its way) allocates no callback.
    if (this.renewer.extensionsPending) this.renewer.whenExtended(() => this.deps.acks.add(this));
    else this.deps.acks.add(this);
  }

  protected handlerThrew(error: unknown): void {
    if (this.renewer.extensionsPending) this.renewer.whenExtended(() => this.settleByThrown(error));
    else this.settleByThrown(error);
  }

  private settleByThrown(error: unknown): void {
    const limit = this.deps.maxDeliveries;
    const decision = this.decideThrown(error, limit.value);
    if (decision.action !== 'dead-letter' || decision.reason !== 'retries-exhausted') {
      this.settleThrown(decision);
      return;
    }
    // The queue's limit may have been raised since it was read: the job dies of it only under
    // the limit as it stands now (a read of the queue's options on this path alone). A lowered
    // limit needs no read: the queue applies it to the retry (R13).
    limit.refresh().then(
      (current) => this.settleThrown(this.decideThrown(error, current)),
      (readError: unknown) => {
        // The queue deleted meanwhile is no failure to report: the nack finds it gone, and the
        // job ends as queue-deleted, as on any other delivery.
        if (!(readError instanceof NotFoundError)) this.deps.onError(readError, 'settle');
        this.settleThrown(decision);
      },
    );
  }

  private decideThrown(error: unknown, maxDeliveries: number): Decision {
    const { id, deliveryCount } = this.delivery;
    return decide(
      { status: 'threw', error },
      {
        id,
        deliveryCount,
        maxDeliveries,
        backoff: this.deps.options.backoff,
        maxDelay: this.deps.maxDelay,
      },
    );
  }

  private settleThrown(decision: Decision): void {
    const { id } = this.delivery;
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
    // The queue was deleted while the handler ran: no outage, and nothing to redeliver, as a
    // renewal that finds it gone says.
    if (error instanceof NotFoundError) {
      this.finish({ outcome: 'lease-lost', reason: 'queue-deleted' });
      return;
    }
    this.deps.metrics.settleErrors += 1;
    this.deps.onError(error, 'settle');
    const failure = `${settlement.outcome} not settled: ${errorMessage(error)}`;
    this.finish({ outcome: 'lease-lost', reason: 'settle-failed', error: failure });
  }

  protected override claimedHook(byHandler: boolean): void {
    // The handler's result settles the job once the extensions it asked for were answered.
    if (byHandler) this.renewer.handlerEnded();
    else this.renewer.stop();
  }
}
