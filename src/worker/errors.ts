import { cutBefore } from '../core/cut.js';
import { CodedError, groupDigits } from '../core/errors.js';
/**
 * The errors of the worker library. A handler throws the outcome errors to choose what happens
 * to its job; the worker raises the others. Callers branch on `code`, which never changes once
 * released; messages are for people and may be reworded.
 */
export type WorkerErrorCode =
  | 'RETRYABLE'
  | 'PERMANENT'
  | 'DUPLICATE'
  | 'AMBIGUOUS'
  | 'LEASE_LOST'
  | 'WORKER_CLOSING';

/** An error of the worker library, by `WorkerErrorCode`. */
export abstract class WorkerError extends CodedError<WorkerErrorCode> {}

/**
 * The attempt failed and another may succeed: the job is retried after a backoff (R15) until
 * the queue's maxDeliveries. Unknown errors are treated the same way; throw this one to choose
 * the delay yourself (e.g. a rate limit's Retry-After).
 */
export class RetryableError extends WorkerError {
  readonly code = 'RETRYABLE' as const;
  /** Milliseconds before the retry, instead of the backoff. Integer ≥ 0. */
  readonly delay: number | undefined;
  constructor(
    message: string,
    options: {
      /** Milliseconds before the retry, instead of the backoff. Integer ≥ 0. Default: the backoff's. */
      delay?: number;
      /** What caused it, kept as the error's `cause`. */
      cause?: unknown;
    } = {},
  ) {
    super(message, options);
    this.delay = options.delay;
  }
}

/** The job can never succeed (bad payload, refused by the other side): dead-lettered at once. */
export class PermanentError extends WorkerError {
  readonly code = 'PERMANENT' as const;
  /** The dead-letter reason, 1 to 1024 characters (R18; 'permanent' when it is not). Default 'permanent'. */
  readonly reason: string;
  constructor(
    message: string,
    options: {
      /** The dead-letter reason, 1 to 1024 characters (R18). Default 'permanent'. */
      reason?: string;
      /** What caused it, kept as the error's `cause`. */
      cause?: unknown;
    } = {},
  ) {
    super(message, options);
    this.reason = options.reason ?? 'permanent';
  }
}

/** The work was already done (an earlier delivery did it): acked, counted as a duplicate. */
export class DuplicateError extends WorkerError {
  readonly code = 'DUPLICATE' as const;
}

/**
 * The effect may or may not have happened (a timeout after the request was sent). Retrying
 * blindly could do it twice, so the job is dead-lettered with reason 'ambiguous' for
 * reconciliation.
 */
export class AmbiguousError extends WorkerError {
  readonly code = 'AMBIGUOUS' as const;
}

/** Why a lease was lost. */
export type LeaseLossReason =
  | 'expired'
  | 'renewal-refused'
  | 'session-ended'
  | 'stale-ack'
  | 'stale-nack'
  | 'settle-failed'
  | 'cancelled'
  /** The job's queue was deleted while the handler ran (a renewal or its ack or nack answered NOT_FOUND). */
  | 'queue-deleted'
  /** Received at most once (`ack: 'auto'`, R22): the job never had a lease to extend. */
  | 'auto-ack';

/**
 * The worker no longer holds the job's lease: another consumer may have it now. The reason of
 * `ctx.signal` when it fires for that cause; `ctx.extend` throws it. The job's result is dropped.
 */
export class LeaseLostError extends WorkerError {
  readonly code = 'LEASE_LOST' as const;
  constructor(
    /** Why it was lost. */
    readonly reason: LeaseLossReason,
    /** The job's id. */
    readonly id: string,
    /** The token of the delivery whose lease was lost. */
    readonly token: number,
  ) {
    super(`lease of job ${id} (token ${token}) lost: ${reason}`);
  }
}

/**
 * The worker is shutting down and the close timeout passed before the handler finished: the
 * reason of `ctx.signal`; the job is released for immediate redelivery.
 */
export class WorkerClosingError extends WorkerError {
  readonly code = 'WORKER_CLOSING' as const;
}

/**
 * The most of a thrown value's message the worker writes (log lines, outcomes,
 * `metrics().lastError`), in characters (UTF-16 code units): a message built from a large
 * payload must not make every line and snapshot as large.
 */
export const MAX_ERROR_MESSAGE_LENGTH = 8192;

/**
 * The message of anything thrown, its first MAX_ERROR_MESSAGE_LENGTH characters and, past them,
 * how many more there were. Never throws itself: a value that cannot be shown (a message getter
 * that throws, a Proxy, an object with neither JSON nor toString) gets a fixed text.
 */
export function errorMessage(error: unknown): string {
  try {
    return boundedMessage(fullMessage(error));
  } catch {
    return 'a thrown value that cannot be shown';
  }
}

function fullMessage(error: unknown): string {
  if (isInstance(error, Error)) return String(error.message);
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

/** `text` cut to MAX_ERROR_MESSAGE_LENGTH, never inside a surrogate pair, saying how much was cut. */
function boundedMessage(text: string): string {
  if (text.length <= MAX_ERROR_MESSAGE_LENGTH) return text;
  const end = cutBefore(text, MAX_ERROR_MESSAGE_LENGTH);
  return `${text.slice(0, end)}… (${groupDigits(text.length - end)} more characters)`;
}

/** `value instanceof type`, false when the value's prototype cannot be read (a throwing Proxy). */
export function isInstance<T>(
  value: unknown,
  type: abstract new (...args: never[]) => T,
): value is T {
  try {
    return value instanceof type;
  } catch {
    return false;
  }
}

/** `{ code }` of an error that has a string code (leaseq's errors, Node's system errors), else `{}`. */
export function errorCode(error: unknown): { code?: string } {
  try {
    const code = (error as { code?: unknown } | null | undefined)?.code;
    return typeof code === 'string' ? { code } : {};
  } catch {
    // A thrown value with a throwing getter has no code to give.
    return {};
  }
}
