import { OUTCOME_KINDS, type OutcomeKind } from './outcome.js';

/** A point-in-time copy of a worker's counters (R17). Times are milliseconds. */
export interface WorkerMetricsSnapshot {
  /** Jobs the worker holds now: received and not yet settled (at most once too: no lease). */
  inHand: number;
  /** Deliveries received. */
  received: number;
  /** Final outcomes by kind. */
  outcomes: Record<OutcomeKind, number>;
  /** Retryable failures requeued with a backoff (= outcomes.retried). */
  retries: number;
  /**
   * Dead-letters by reason ('retries-exhausted', 'permanent', 'ambiguous', …). At most
   * MAX_OWN_DEAD_LETTER_REASONS reasons of the handlers' own are counted apart; the dead letters
   * of any reason past them are counted under OTHER_DEAD_LETTER_REASONS.
   */
  deadLetters: Record<string, number>;
  /** Successful lease extensions, automatic and through ctx.extend. */
  renewals: number;
  /** Extensions that threw (the lease may still be alive; retried until it ends). */
  renewalErrors: number;
  /** Deliveries whose lease the worker lost (= outcomes['lease-lost']). */
  leasesLost: number;
  /** Acks that returned false: the lease had ended before the ack (R8). */
  staleAcks: number;
  /** Nacks that returned false. */
  staleNacks: number;
  /** Acks and nacks that threw; the delivery is redelivered after its lease. */
  settleErrors: number;
  /** Receives that threw. */
  fetchErrors: number;
  /** Handlers still running after their job was settled without them (lease lost, released). */
  abandonedHandlers: number;
  /** Receipt to settlement, over every final outcome. */
  processingTime: {
    /** Outcomes timed. */
    count: number;
    /** Their times added up, ms. */
    sum: number;
    /** The longest, ms; 0 when none. */
    max: number;
  };
  /** The last failure a handler threw, with its job. */
  lastError:
    | {
        /** The job's id. */
        id: string;
        /** The delivery's token. */
        token: number;
        /** The error's message. */
        message: string;
      }
    | undefined;
}

/**
 * Most distinct dead-letter reasons of the handlers' own (a PermanentError's `reason`) counted
 * apart: a reason that carries a job's own text (its id, the field it lacked) would otherwise
 * grow the counts, and every snapshot of them, with every job that died of it.
 */
export const MAX_OWN_DEAD_LETTER_REASONS = 100;

/** Where the dead letters of the reasons past MAX_OWN_DEAD_LETTER_REASONS are counted. */
export const OTHER_DEAD_LETTER_REASONS = '(other reasons)';

/** The reasons the worker itself dead-letters with: always counted apart. */
const WORKER_REASONS: ReadonlySet<string> = new Set([
  'permanent',
  'retries-exhausted',
  'ambiguous',
]);

/** The counters behind `worker.metrics()`. */
export class WorkerMetrics {
  received = 0;
  renewals = 0;
  renewalErrors = 0;
  staleAcks = 0;
  staleNacks = 0;
  settleErrors = 0;
  fetchErrors = 0;
  abandonedHandlers = 0;
  lastError: WorkerMetricsSnapshot['lastError'];
  private readonly outcomes = Object.fromEntries(OUTCOME_KINDS.map((kind) => [kind, 0])) as Record<
    OutcomeKind,
    number
  >;
  /** By the reasons handlers chose, any text: kept in a Map, as `constructor` or `__proto__` are reasons too. */
  private readonly deadLetters = new Map<string, number>();
  /** Distinct reasons of the handlers' own in `deadLetters`. */
  private ownReasons = 0;
  private readonly processingTime = { count: 0, sum: 0, max: 0 };

  recordOutcome(kind: OutcomeKind, durationMs: number, deadReason?: string): void {
    this.outcomes[kind] += 1;
    if (deadReason !== undefined) {
      const key = this.deadLetterKey(deadReason);
      this.deadLetters.set(key, (this.deadLetters.get(key) ?? 0) + 1);
    }
    this.processingTime.count += 1;
    this.processingTime.sum += durationMs;
    this.processingTime.max = Math.max(this.processingTime.max, durationMs);
  }

  /** Where a dead letter of `reason` is counted: under it, or past the bound under the others. */
  private deadLetterKey(reason: string): string {
    if (this.deadLetters.has(reason) || WORKER_REASONS.has(reason)) return reason;
    if (this.ownReasons >= MAX_OWN_DEAD_LETTER_REASONS) return OTHER_DEAD_LETTER_REASONS;
    this.ownReasons += 1;
    return reason;
  }

  snapshot(inHand: number): WorkerMetricsSnapshot {
    return {
      inHand,
      received: this.received,
      outcomes: { ...this.outcomes },
      retries: this.outcomes.retried,
      deadLetters: countsByReason(this.deadLetters),
      renewals: this.renewals,
      renewalErrors: this.renewalErrors,
      leasesLost: this.outcomes['lease-lost'],
      staleAcks: this.staleAcks,
      staleNacks: this.staleNacks,
      settleErrors: this.settleErrors,
      fetchErrors: this.fetchErrors,
      abandonedHandlers: this.abandonedHandlers,
      processingTime: { ...this.processingTime },
      lastError: this.lastError === undefined ? undefined : { ...this.lastError },
    };
  }
}

/** The counts as a plain object; a reason named `__proto__` is an own property like any other. */
function countsByReason(counts: ReadonlyMap<string, number>): Record<string, number> {
  const object: Record<string, number> = {};
  for (const [reason, count] of counts) {
    Object.defineProperty(object, reason, {
      value: count,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return object;
}
