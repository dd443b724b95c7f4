import type { Clock } from '../broker/clock.js';
import type { Queue } from '../broker/queue.js';
import { NotFoundError } from '../core/index.js';
import type { LeaseLossReason } from './errors.js';
import { ioTurn } from './io-turn.js';
import type { RenewPolicy } from './options.js';
import type { Scheduled, WakeScheduler } from './wake-scheduler.js';

/** What one renewal step did. */
export type RenewalStep = 'renewed' | 'waiting' | 'capped' | 'error' | 'lost' | 'stopped';

/** How a worker renews leases: shared by every delivery it holds. */
export interface RenewalConfig {
  queue: Queue;
  clock: Clock;
  /** The worker's one timer for all its leases. */
  scheduler: WakeScheduler;
  /** Lease length asked for by each automatic renewal, ms. */
  leaseMs: number;
  policy: RenewPolicy;
  /** Share of a lease that has passed when it is renewed, (0, 1). */
  renewAt: number;
  maxRenewals: number;
}

/** The holder of one lease: told when it was renewed, failed to be, or was lost. */
export interface LeaseHolder {
  leaseRenewed(): void;
  leaseRenewalFailed(error: unknown): void;
  leaseLost(reason: LeaseLossReason): void;
}

/**
 * Keeps one delivery's lease. It renews (queue.extend) when the `renewAt` share of the current
 * lease (of leaseMs at most, see renewalDueAt) has passed, as the policy allows, and reports the
 * lease lost when the queue refuses a renewal (a stale token) or when the deadline passes
 * without one. It has no timer of its own: the worker's scheduler wakes it when a renewal or
 * the deadline is due. Durations are measured on the worker's own clock: a deadline moves
 * locally by exactly as much as the queue moved it, so a skew between the worker's and the
 * queue's clocks does not matter.
 */
export class LeaseRenewer implements Scheduled {
  heapIndex = -1;
  wakeAt = 0;
  /** Automatic renewals so far (bounded by maxRenewals). */
  renewals = 0;
  private lastLeaseMs: number;
  /**
   * When the queue answered the current deadline, on the worker's clock: the reservation (the
   * start of its lease as counted here), then each extension's answer.
   */
  private answeredAt: number;
  /**
   * The queue's time when it answered the current deadline, at the least (its clock): that
   * deadline less the lease asked for then, or, when its maxLease gave less than was asked, the
   * time it surely was when the extension reached it (see queueTimeAtLeast).
   */
  private answeredQueueAt: number;
  private progressed = false;
  /** Progress reports so far: those made while an extension is on its way count for the next. */
  private reports = 0;
  private capped = false;
  private stopped = false;
  /**
   * The handler ended, and its result settles the job: no more automatic renewals, but the
   * extensions it asked for (ctx.extend) still go out and are answered (see whenExtended).
   */
  private handlerOver = false;
  /** Extensions the handler asked for (ctx.extend) and whose answer has not come. */
  private handlerExtends = 0;
  /** What waits for those answers: the job's settlement, one at most (see whenExtended). */
  private afterExtends: (() => void) | undefined;
  private retryAt = 0;
  private busy: Promise<unknown> | undefined;
  /** An automatic renewal is on its way: the next wake-up is the deadline, whatever it answers. */
  private renewing = false;
  /** Extends sent and not yet answered (automatic or ctx.extend). */
  private extending = 0;
  private lastError: unknown;

  constructor(
    private readonly config: RenewalConfig,
    private readonly holder: LeaseHolder,
    private readonly token: number,
    /** The delivery's deadline as the queue reported it. */
    private deadline: number,
    /** The same deadline on the worker's clock. */
    private localDeadline: number,
  ) {
    this.lastLeaseMs = config.leaseMs;
    this.answeredAt = localDeadline - config.leaseMs;
    this.answeredQueueAt = deadline - config.leaseMs;
  }

  /** The current deadline as the queue reported it (ms). */
  get currentDeadline(): number {
    return this.deadline;
  }

  /** When the worker itself considers the lease over (worker clock, ms). */
  get expiresAt(): number {
    return this.localDeadline;
  }

  /** When the next automatic renewal is due (worker clock, ms); Infinity when none will be. */
  get renewalDueAt(): number {
    if (!this.mayRenew()) return Number.POSITIVE_INFINITY;
    if (this.config.policy === 'on-progress' && !this.progressed) return Number.POSITIVE_INFINITY;
    // A renewal asks for leaseMs from now: after a longer ctx.extend, it is due only once the
    // deadline is nearer than a renewal's slack, so it never brings that deadline earlier.
    const lease = Math.min(this.lastLeaseMs, this.config.leaseMs);
    const slack = Math.ceil(lease * (1 - this.config.renewAt));
    return Math.max(this.localDeadline - slack, this.retryAt);
  }

  /** Starts keeping the lease: the scheduler wakes it when something is due. */
  start(): void {
    this.reschedule();
  }

  /** The handler reported progress: with 'on-progress', the next renewal may happen. */
  progress(): void {
    this.progressed = true;
    this.reports += 1;
    if (this.config.policy === 'on-progress') this.reschedule();
  }

  /** The job was given up (released, or its lease lost): no more renewals, nor answers read. */
  stop(): void {
    this.stopped = true;
    this.config.scheduler.cancel(this);
    this.extended();
  }

  /**
   * The handler ended, and its result settles the job: no more automatic renewals. The
   * extensions it asked for and has not seen answered still count: each resolves with what the
   * queue granted (see whenExtended). The deadline's wake-up stays set while they are on their
   * way.
   */
  handlerEnded(): void {
    this.handlerOver = true;
    this.reschedule();
  }

  /**
   * Calls `then` once the extensions the handler asked for were answered: at once when none is
   * on its way. The job's ack or nack goes after them, so that an extension granted before it
   * is answered as granted, not refused for a settlement that overtook it (over the network, or
   * on another connection of the storage's pool). One whose answer has not come by the lease's
   * deadline holds it no longer: the lease was not kept past it (see runOnce).
   */
  whenExtended(then: () => void): void {
    if (this.extensionsPending) this.afterExtends = then;
    else then();
  }

  /** Whether the handler's extensions hold its settlement (see whenExtended). */
  get extensionsPending(): boolean {
    return this.handlerExtends > 0 && !this.stopped;
  }

  /**
   * Shutdown, its grace period over: the settlement waiting for the handler's extensions goes
   * now. Their answers are still read, as the lease is still kept until the worker closes.
   */
  settleNow(): void {
    this.extended();
  }

  /** The scheduler's call: one step, then the next wake-up. */
  wake(): void {
    this.runOnce().catch((error: unknown) => this.holder.leaseRenewalFailed(error));
  }

  /** One step at the clock's now: report the lease lost, renew it, or do nothing yet. */
  async runOnce(): Promise<RenewalStep> {
    if (this.stopped) return 'stopped';
    const now = this.config.clock.now();
    if (now >= this.localDeadline) {
      if (this.extending > 0) {
        // The answer to a renewal may be waiting unread behind this wake-up, late behind a
        // blocked event loop: read it first. One that has not come by then counts for nothing.
        await ioTurn();
        if (this.stopped) return 'stopped';
        if (this.config.clock.now() < this.localDeadline) {
          this.reschedule();
          return 'waiting';
        }
      }
      return this.lose('expired');
    }
    if (now >= this.renewalDueAt) {
      // A renewal whose answer never comes (a half-open connection) must not keep the lease
      // past its deadline: the deadline's wake-up stays set while it is on its way.
      this.renewing = true;
      this.reschedule();
      let step: RenewalStep;
      try {
        step = await this.extendBy(this.config.leaseMs, true);
      } finally {
        this.renewing = false;
      }
      if (step === 'error') {
        this.retryAt = now + Math.max(1, Math.floor((this.localDeadline - now) / 2));
      }
      this.reschedule();
      return step;
    }
    this.reschedule();
    return 'waiting';
  }

  /**
   * Extends the lease by `visibility` ms from now (ctx.extend). Returns the new deadline, or
   * null when the lease is lost; throws what the queue threw.
   */
  async extend(visibility: number): Promise<number | null> {
    this.handlerExtends += 1;
    let step: RenewalStep;
    try {
      step = await this.extendBy(visibility, false);
    } finally {
      this.handlerExtends -= 1;
      if (this.handlerExtends === 0) this.extended();
    }
    this.reschedule();
    if (step === 'lost' || step === 'stopped') return null;
    if (step === 'error') throw this.lastError;
    return this.deadline;
  }

  /** Wakes at the deadline or at the next renewal, whichever comes first. */
  private reschedule(): void {
    if (this.stopped) return;
    if (this.handlerOver && this.handlerExtends === 0) {
      // Nothing more to keep: the settlement is on its way.
      this.config.scheduler.cancel(this);
      return;
    }
    const renewal = this.renewing ? Number.POSITIVE_INFINITY : this.renewalDueAt;
    this.config.scheduler.schedule(this, Math.min(this.localDeadline, renewal));
  }

  private extendBy(visibility: number, automatic: boolean): Promise<RenewalStep> {
    const previous = this.busy;
    this.extending += 1;
    const next = (
      previous === undefined
        ? this.extendNow(visibility, automatic)
        : previous.then(() => this.extendNow(visibility, automatic))
    ).finally(() => {
      this.extending -= 1;
    });
    this.busy = next.catch(() => undefined);
    return next;
  }

  private async extendNow(visibility: number, automatic: boolean): Promise<RenewalStep> {
    if (this.stopped) return 'stopped';
    const { clock, queue } = this.config;
    // Two steps may have found a renewal due at once; the one that ran first made it.
    if (automatic && clock.now() < this.renewalDueAt) return 'waiting';
    const sentAt = clock.now();
    const reportsSent = this.reports;
    let deadline: number | null;
    try {
      deadline = await queue.extend(this.token, visibility);
    } catch (error) {
      // The queue is gone (deleted), and the lease with it: not an outage to ride out until the
      // deadline, retrying (a queue made again with the name refuses the old token anyway).
      if (error instanceof NotFoundError) return this.lose('queue-deleted');
      this.lastError = error;
      this.holder.leaseRenewalFailed(error);
      return 'error';
    }
    if (this.stopped) return 'stopped';
    if (deadline === null) return this.lose('renewal-refused');
    this.retryAt = 0;
    if (this.askedLater(visibility, sentAt) && deadline <= this.deadline) {
      // Asked for a later deadline and did not get one: the queue's maxLease (R10) holds it,
      // earlier than before when the maxLease was lowered since the delivery was made.
      this.capped = true;
      this.answered(deadline, visibility, sentAt);
      return 'capped';
    }
    if (automatic) this.renewals += 1;
    // This renewal answers the reports made before it was sent, not those made on its way.
    if (this.reports === reportsSent) this.progressed = false;
    this.answered(deadline, visibility, sentAt);
    this.lastLeaseMs = visibility;
    this.holder.leaseRenewed();
    return 'renewed';
  }

  /**
   * Whether an extension of `visibility` ms sent at `sentAt` surely asked for a deadline later
   * than the current one: the queue's time when it answers it is at least queueTimeAtLeast.
   * Measured from the last answer, not from the receipt: two clocks that drift apart over a
   * long job do not make an extension look capped. Extensions the queue answers within one of
   * its milliseconds (`await ctx.extend()` twice in a row) get the same deadline without any cap.
   */
  private askedLater(visibility: number, sentAt: number): boolean {
    return this.queueTimeAtLeast(sentAt) + visibility > this.deadline;
  }

  /**
   * The queue's time, at the least, once the worker's clock reads `at`: its time when it answered
   * the current deadline plus what has passed here since, less a millisecond (its clock and the
   * worker's count whole milliseconds, each read at its own instant).
   */
  private queueTimeAtLeast(at: number): number {
    return this.answeredQueueAt + Math.max(0, at - this.answeredAt - 1);
  }

  /**
   * The queue answered an extension of `visibility` sent at `sentAt` with `deadline`. It answered
   * at `deadline - visibility` or later: later when its maxLease gave less than was asked, so
   * what was already known of its time is kept. Not the deadline less the lease asked for:
   * after a ctx.extend the maxLease cut short, a renewal that meets the same cap would read as
   * uncapped, and renew again at once, in a loop.
   */
  private answered(deadline: number, visibility: number, sentAt: number): void {
    this.answeredQueueAt = Math.max(deadline - visibility, this.queueTimeAtLeast(sentAt));
    this.answeredAt = this.config.clock.now();
    this.moveDeadline(deadline);
  }

  /** The deadline moves locally by exactly as much as the queue moved it (earlier, too). */
  private moveDeadline(deadline: number): void {
    this.localDeadline += deadline - this.deadline;
    this.deadline = deadline;
  }

  private mayRenew(): boolean {
    return (
      !this.stopped &&
      !this.handlerOver &&
      !this.capped &&
      this.config.policy !== 'never' &&
      this.renewals < this.config.maxRenewals
    );
  }

  private lose(reason: LeaseLossReason): 'lost' {
    if (!this.stopped) {
      this.stopped = true;
      this.config.scheduler.cancel(this);
      this.holder.leaseLost(reason);
      this.extended();
    }
    return 'lost';
  }

  /** The handler's extensions were answered, or will not be waited for: what waited goes on. */
  private extended(): void {
    const waiting = this.afterExtends;
    if (waiting === undefined) return;
    this.afterExtends = undefined;
    waiting();
  }
}
