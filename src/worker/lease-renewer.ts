import type { Clock } from '../broker/clock.js';
import type { Queue } from '../broker/queue.js';
import type { LeaseLossReason } from './errors.js';
import type { RenewPolicy } from './options.js';

/** What one renewal step did. */
export type RenewalStep = 'renewed' | 'waiting' | 'capped' | 'error' | 'lost' | 'stopped';

export interface LeaseRenewerParams {
  queue: Queue;
  clock: Clock;
  token: number;
  /** The delivery's deadline as the queue reported it. */
  deadline: number;
  /** The same deadline on the worker's clock (see `localDeadline`). */
  localDeadline: number;
  /** Lease length asked for by each automatic renewal, ms. */
  leaseMs: number;
  policy: RenewPolicy;
  /** Share of a lease that has passed when it is renewed, (0, 1). */
  renewAt: number;
  maxRenewals: number;
  onRenewed: () => void;
  onRenewError: (error: unknown) => void;
  onLost: (reason: LeaseLossReason) => void;
}

/**
 * Keeps one delivery's lease. It renews (queue.extend) when the `renewAt` share of the current
 * lease has passed, as the policy allows, and reports the lease lost when the queue refuses a
 * renewal (a stale token) or when the deadline passes without one. Durations are measured on
 * the worker's own clock: a deadline moves locally by exactly as much as the queue moved it, so
 * a skew between the worker's and the queue's clocks does not matter.
 */
export class LeaseRenewer {
  /** Automatic renewals so far (bounded by maxRenewals). */
  renewals = 0;
  private deadline: number;
  private localDeadline: number;
  private lastLeaseMs: number;
  private progressed = false;
  private capped = false;
  private stopped = false;
  private retryAt = 0;
  private poke: AbortController | undefined;
  private busy: Promise<unknown> = Promise.resolve();
  private lastError: unknown;

  constructor(private readonly params: LeaseRenewerParams) {
    this.deadline = params.deadline;
    this.localDeadline = params.localDeadline;
    this.lastLeaseMs = params.leaseMs;
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
    if (this.params.policy === 'on-progress' && !this.progressed) return Number.POSITIVE_INFINITY;
    const slack = Math.ceil(this.lastLeaseMs * (1 - this.params.renewAt));
    return Math.max(this.localDeadline - slack, this.retryAt);
  }

  /** The handler reported progress: with 'on-progress', the next renewal may happen. */
  progress(): void {
    this.progressed = true;
    this.poke?.abort();
  }

  /** The job was settled or given up: no more renewals, the loop ends. */
  stop(): void {
    this.stopped = true;
    this.poke?.abort();
  }

  /** One step at the clock's now: report the lease lost, renew it, or do nothing yet. */
  async runOnce(): Promise<RenewalStep> {
    if (this.stopped) return 'stopped';
    const now = this.params.clock.now();
    if (now >= this.localDeadline) return this.lose('expired');
    if (now < this.renewalDueAt) return 'waiting';
    const step = await this.extendBy(this.params.leaseMs, true);
    if (step === 'error')
      this.retryAt = now + Math.max(1, Math.floor((this.localDeadline - now) / 2));
    return step;
  }

  /** Runs `runOnce` whenever something is due, until the job is settled or the lease lost. */
  async run(): Promise<void> {
    for (;;) {
      const step = await this.runOnce();
      if (step === 'lost' || step === 'stopped') return;
      const wakeAt = Math.min(this.localDeadline, this.renewalDueAt);
      const poke = new AbortController();
      this.poke = poke;
      if (this.stopped) return;
      await this.params.clock.sleep(Math.max(0, wakeAt - this.params.clock.now()), poke.signal);
      this.poke = undefined;
    }
  }

  /**
   * Extends the lease by `visibility` ms from now (ctx.extend). Returns the new deadline, or
   * null when the lease is lost; throws what the queue threw.
   */
  async extend(visibility: number): Promise<number | null> {
    const step = await this.extendBy(visibility, false);
    if (step === 'lost' || step === 'stopped') return null;
    if (step === 'error') throw this.lastError;
    return this.deadline;
  }

  private extendBy(visibility: number, automatic: boolean): Promise<RenewalStep> {
    const next = this.busy.then(() => this.extendNow(visibility, automatic));
    this.busy = next.catch(() => undefined);
    return next;
  }

  private async extendNow(visibility: number, automatic: boolean): Promise<RenewalStep> {
    if (this.stopped) return 'stopped';
    // Two steps may have found a renewal due at once; the one that ran first made it.
    if (automatic && this.params.clock.now() < this.renewalDueAt) return 'waiting';
    const sentAt = this.params.clock.now();
    let deadline: number | null;
    try {
      deadline = await this.params.queue.extend(this.params.token, visibility);
    } catch (error) {
      this.lastError = error;
      this.params.onRenewError(error);
      return 'error';
    }
    if (this.stopped) return 'stopped';
    if (deadline === null) return this.lose('renewal-refused');
    this.retryAt = 0;
    if (sentAt + visibility > this.localDeadline && deadline <= this.deadline) {
      // Asked for a later deadline and did not get one: the queue's maxLease (R10) holds it.
      this.capped = true;
      return 'capped';
    }
    if (automatic) this.renewals += 1;
    this.progressed = false;
    // The deadline moves locally by exactly as much as the queue moved it (earlier, too).
    this.localDeadline += deadline - this.deadline;
    this.deadline = deadline;
    this.lastLeaseMs = visibility;
    this.params.onRenewed();
    return 'renewed';
  }

  private mayRenew(): boolean {
    return (
      !this.stopped &&
      !this.capped &&
      this.params.policy !== 'never' &&
      this.renewals < this.params.maxRenewals
    );
  }

  private lose(reason: LeaseLossReason): 'lost' {
    if (!this.stopped) {
      this.stopped = true;
      this.params.onLost(reason);
    }
    return 'lost';
  }
}
