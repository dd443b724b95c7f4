import type { Queue } from '../broker/queue.js';
import { backoffDelay, MAX_REASON_LENGTH, storableText } from '../core/index.js';
import { Problems, show } from '../core/validate.js';
import {
  AmbiguousError,
  DuplicateError,
  errorMessage,
  isInstance,
  PermanentError,
  RetryableError,
} from './errors.js';
import type { ResolvedBackoff } from './options.js';

/** How a job in hand ended, as counted in metrics and logged. */
export type OutcomeKind =
  | 'acked'
  | 'retried'
  | 'dead'
  | 'duplicate'
  | 'ambiguous'
  | 'released'
  | 'lease-lost'
  | 'lost';

/** Every OutcomeKind. */
export const OUTCOME_KINDS: readonly OutcomeKind[] = [
  'acked',
  'retried',
  'dead',
  'duplicate',
  'ambiguous',
  'released',
  'lease-lost',
  'lost',
];

/** What the handler did. */
export type HandlerResult =
  | {
      /** It returned. */
      status: 'returned';
      /** true when it called `ctx.duplicate()`: the work was already done. */
      duplicate: boolean;
    }
  | {
      /** It threw. */
      status: 'threw';
      /** What it threw. */
      error: unknown;
    };

/** What the worker does with the delivery: the one place where results become queue calls. */
export type Decision =
  | {
      /** Ack the delivery. */
      action: 'ack';
      /** The outcome it is recorded as. */
      kind: 'acked' | 'duplicate';
      /** Why, when there is more to say than the kind. */
      reason?: string;
    }
  | {
      /** Nack with requeue, after `delay`. */
      action: 'retry';
      /** The outcome it is recorded as. */
      kind: 'retried';
      /** Milliseconds before the job is ready again. */
      delay: number;
      /** Why it is retried. */
      reason: string;
      /** The message of what the handler threw. */
      error: string;
    }
  | {
      /** Nack without requeue: the job dies with `reason`. */
      action: 'dead-letter';
      /** The outcome it is recorded as. */
      kind: 'dead' | 'ambiguous';
      /** The dead-letter reason. */
      reason: string;
      /** The message of what the handler threw. */
      error: string;
    };

/** What `decide` needs to know of the delivery and the queue. */
export interface DecisionInput {
  /** The job's id (the backoff's jitter is a function of it, R15). */
  id: string;
  /** The job's deliveries so far, this one included. */
  deliveryCount: number;
  /** The queue's maxDeliveries (R13); Infinity retries forever. */
  maxDeliveries: number;
  /** The worker's backoff. */
  backoff: ResolvedBackoff;
  /** The longest delay the queue takes (ms; absent or Infinity: no bound): a longer one is cut to it. */
  maxDelay?: number;
}

/**
 * The outcome table (docs/worker.md):
 * returned → ack; returned after ctx.duplicate() or threw DuplicateError → ack as duplicate;
 * threw PermanentError → dead-letter with its reason; threw AmbiguousError → dead-letter
 * 'ambiguous'; threw anything else → retry after backoff (R15) while deliveryCount <
 * maxDeliveries, then dead-letter 'retries-exhausted'.
 */
export function decide(result: HandlerResult, input: DecisionInput): Decision {
  if (result.status === 'returned') {
    return result.duplicate
      ? { action: 'ack', kind: 'duplicate' }
      : { action: 'ack', kind: 'acked' };
  }
  const { error } = result;
  const message = errorMessage(error);
  if (isInstance(error, DuplicateError)) {
    return { action: 'ack', kind: 'duplicate', reason: message };
  }
  if (isInstance(error, PermanentError)) {
    // Read once, and never thrown from: a getter of a subclass's own that throws must not leave
    // the job unsettled, its lease held and its handler run again when the lease ends.
    const reason = fieldOf(error, 'reason');
    const refused = reason.unreadable === undefined ? reasonProblem(reason.value) : undefined;
    if (reason.unreadable === undefined && refused === undefined) {
      return {
        action: 'dead-letter',
        kind: 'dead',
        reason: reason.value as string,
        error: message,
      };
    }
    // A reason the queue would refuse must not turn "dead at once" into a lease left to run out
    // and a handler run again on every delivery: the job dies with the default reason.
    const why = reason.unreadable ?? `its reason was refused: ${refused}`;
    const error_ = `${message} (${why}; dead-lettered as permanent)`;
    return { action: 'dead-letter', kind: 'dead', reason: 'permanent', error: error_ };
  }
  if (isInstance(error, AmbiguousError)) {
    return { action: 'dead-letter', kind: 'ambiguous', reason: 'ambiguous', error: message };
  }
  if (input.deliveryCount >= input.maxDeliveries) {
    return { action: 'dead-letter', kind: 'dead', reason: 'retries-exhausted', error: message };
  }
  const own = isInstance(error, RetryableError) ? fieldOf(error, 'delay') : { value: undefined };
  const chosen = own.value;
  const usable =
    own.unreadable === undefined &&
    (chosen === undefined || (Number.isSafeInteger(chosen) && (chosen as number) >= 0));
  const backoff = () =>
    backoffDelay({ id: input.id, attempt: input.deliveryCount, ...input.backoff });
  const delay = usable ? ((chosen as number | undefined) ?? backoff()) : backoff();
  // Not dropped in silence: a Retry-After read wrongly would otherwise never be noticed.
  const said = usable
    ? message
    : own.unreadable === undefined
      ? `${message} (its delay of ${show(chosen)} is not an integer ≥ 0 ms: retried after the backoff's ${delay} ms)`
      : `${message} (${own.unreadable}: retried after the backoff's ${delay} ms)`;
  // A delay the queue refuses would leave the job leased until its lease ran out, and run it
  // again then: far sooner than asked. The longest the queue takes is the nearest to the ask.
  const { maxDelay = Number.POSITIVE_INFINITY } = input;
  if (delay <= maxDelay) {
    return { action: 'retry', kind: 'retried', delay, reason: 'retryable', error: said };
  }
  const error_ = `${said} (its delay of ${delay} ms is above the longest the queue takes: retried after ${maxDelay} ms)`;
  return { action: 'retry', kind: 'retried', delay: maxDelay, reason: 'retryable', error: error_ };
}

/** Settles a delivery as decided. Returns false when the token was stale (R8, R9). */
export function applyDecision(queue: Queue, token: number, decision: Decision): Promise<boolean> {
  switch (decision.action) {
    case 'ack':
      return queue.ack(token);
    case 'retry':
      return queue.nack(token, { requeue: true, delay: decision.delay, ...attemptError(decision) });
    case 'dead-letter':
      return queue.nack(token, {
        requeue: false,
        reason: decision.reason,
        ...attemptError(decision),
      });
  }
}

/** What the handler threw, as the nack's `error` kept with the attempt in the job's history. */
function attemptError(decision: { error: string }): { error?: string } {
  const error = storableText(decision.error, MAX_REASON_LENGTH);
  return error === undefined ? {} : { error };
}

/**
 * Gives an unfinished job back for immediate redelivery (shutdown): one whose handler never
 * started goes back unworked, not counted as a delivery (R33).
 */
export function release(queue: Queue, token: number, worked: boolean): Promise<boolean> {
  return queue.nack(token, { requeue: true, delay: 0, ...(worked ? {} : { attempted: false }) });
}

/**
 * A field of what the handler threw, read once; `unreadable` says why when its getter threw
 * (a subclass of the handler's own), so that deciding never throws.
 */
function fieldOf(error: object, name: 'reason' | 'delay'): { value: unknown; unreadable?: string } {
  try {
    return { value: (error as Record<typeof name, unknown>)[name] };
  } catch (thrown) {
    return {
      value: undefined,
      unreadable: `its ${name} could not be read: ${errorMessage(thrown)}`,
    };
  }
}

/** Why the queue would refuse `reason` as a dead-letter reason (R18), or undefined. */
function reasonProblem(reason: unknown): string | undefined {
  const problems = new Problems();
  problems.reason('reason', reason);
  return problems.list[0];
}
