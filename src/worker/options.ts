import { type Clock, SystemClock } from '../broker/clock.js';
import { addUnknownOptions } from '../core/errors.js';
import { build, type SessionOptions, ValidationError } from '../core/index.js';
import { show } from '../core/validate.js';
import { jsonLogger, type Logger } from './logger.js';

/** How a worker keeps the leases of the jobs in hand (see docs/worker.md). */
export type RenewPolicy = 'auto' | 'on-progress' | 'never';

/** R15: the delay before a retry, `min(maxDelay, baseDelay · factor^(attempt−1))` with jitter. */
export interface BackoffOptions {
  /** Milliseconds before the first retry, before jitter. Integer ≥ 0. Default 1000. */
  baseDelay?: number;
  /**
   * Upper bound of any retry delay, ms. Integer ≥ baseDelay. Default 60000, or baseDelay if that
   * is larger.
   */
  maxDelay?: number;
  /** Growth per attempt. Number ≥ 1. Default 2. */
  factor?: number;
  /** Share of the delay that is randomised (deterministically per job id and attempt), 0..1. Default 0.5. */
  jitter?: number;
}

/** What `work` and `new Worker` take. Times are milliseconds. */
export interface WorkerOptions {
  /**
   * Most handlers running at once. Positive integer. Default 1. Jobs whose handler ended stay
   * in hand until their ack or nack answers: with the running ones, at most
   * concurrency + max(8 × concurrency, 48) leases in hand.
   */
  concurrency?: number;
  /**
   * `'manual'` (default): each job is received under a lease the worker keeps and settled by
   * the handler's outcome (at least once). `'auto'`: each job is received at most once
   * (`receive({ ack: 'auto' })`, R22), removed from the queue as it is handed out: the handler
   * runs with no lease, nothing is acked or nacked afterwards, and a job whose handler throws
   * (or has not finished when shutdown gives up on it) is lost, never retried — the mode that
   * may lose work. `visibility`, `renew`, `renewAt`, `maxRenewals` and `backoff` do not apply.
   */
  ack?: 'manual' | 'auto';
  /**
   * Milliseconds one receive waits for new work before asking again (a long poll). Positive
   * integer. Default 20000. Any length, as `visibility`.
   */
  wait?: number;
  /**
   * Lease length asked for each reservation and renewal, ms. Positive integer. Default: the
   * queue's visibility. Any length (a server refuses one above its maxVisibilityMs): waits past
   * the longest Node timer (about 24.8 days) are timed in parts by the clock.
   */
  visibility?: number;
  /**
   * 'auto' (default): renew every lease before it runs out. 'on-progress': renew only after
   * `ctx.progress()` was called since the last renewal, so a stuck handler loses its lease.
   * 'never': the lease is what the reservation gave.
   */
  renew?: RenewPolicy;
  /** Share of the lease that has passed when the worker renews it; the rest is slack for latency. In (0, 1). Default 2/3. */
  renewAt?: number;
  /** Most automatic renewals of one delivery. Integer ≥ 0 or Infinity (default). */
  maxRenewals?: number;
  /** Retry delays of retryable failures (R15). */
  backoff?: BackoffOptions;
  /**
   * When given, the worker receives under a consumer session with these options (R16),
   * heartbeats it, and closes it on shutdown; if the session ends, its jobs count as lost.
   */
  session?: SessionOptions;
  /** Where the worker's time and timers come from. Default a SystemClock; in tests, the broker's ManualClock. */
  clock?: Clock;
  /** Receives a line per final outcome and per loop error. Default: JSON lines on stderr. */
  logger?: Logger;
}

/** BackoffOptions with defaults filled in. */
export interface ResolvedBackoff {
  /** Milliseconds before the first retry, before jitter. */
  baseDelay: number;
  /** Upper bound of any retry delay, ms. */
  maxDelay: number;
  /** Growth per attempt. */
  factor: number;
  /** Share of the delay that is randomised, 0..1. */
  jitter: number;
}

export interface ResolvedWorkerOptions {
  concurrency: number;
  ack: 'manual' | 'auto';
  wait: number;
  visibility: number | undefined;
  renew: RenewPolicy;
  renewAt: number;
  maxRenewals: number;
  backoff: ResolvedBackoff;
  session: SessionOptions | undefined;
  clock: Clock;
  logger: Logger;
}

const RENEW_POLICIES: readonly RenewPolicy[] = ['auto', 'on-progress', 'never'];
const ACK_MODES: readonly ('manual' | 'auto')[] = ['manual', 'auto'];
const KNOWN_OPTIONS = new Set([
  'concurrency',
  'ack',
  'wait',
  'visibility',
  'renew',
  'renewAt',
  'maxRenewals',
  'backoff',
  'session',
  'clock',
  'logger',
]);

/**
 * Checks worker options and fills in defaults; every problem, with those the caller found
 * already (`issues`), is listed in one ValidationError.
 */
export function resolveWorkerOptions(
  options: WorkerOptions = {},
  issues: string[] = [],
): ResolvedWorkerOptions {
  if (!isObject(options) || Array.isArray(options)) {
    throw new ValidationError([...issues, 'options must be an object'].map((i) => `worker: ${i}`));
  }
  const check = (ok: boolean, issue: string) => {
    if (!ok) issues.push(issue);
  };
  addUnknownOptions(issues, Object.keys(options), (key) => KNOWN_OPTIONS.has(key), {
    quote: false,
  });
  const {
    concurrency = 1,
    ack = 'manual',
    wait = 20_000,
    visibility,
    renew = 'auto',
    renewAt = 2 / 3,
    maxRenewals = Number.POSITIVE_INFINITY,
  } = options;
  check(
    isPositiveInteger(concurrency),
    `concurrency must be a positive integer, got ${show(concurrency)}`,
  );
  check(ACK_MODES.includes(ack), `ack must be 'manual' or 'auto', got ${show(ack)}`);
  check(isPositiveInteger(wait), `wait must be a positive integer (ms), got ${show(wait)}`);
  check(
    visibility === undefined || isPositiveInteger(visibility),
    `visibility must be a positive integer (ms), got ${show(visibility)}`,
  );
  check(
    RENEW_POLICIES.includes(renew),
    `renew must be one of ${RENEW_POLICIES.join(', ')}, got ${show(renew)}`,
  );
  check(
    typeof renewAt === 'number' && renewAt > 0 && renewAt < 1,
    `renewAt must be a number in (0, 1), got ${show(renewAt)}`,
  );
  check(
    maxRenewals === Number.POSITIVE_INFINITY || (isInteger(maxRenewals) && maxRenewals >= 0),
    `maxRenewals must be an integer ≥ 0 or Infinity, got ${show(maxRenewals)}`,
  );
  // Only a missing backoff takes the defaults: null is refused, as it is for every other option.
  const backoff = resolveBackoff(options.backoff === undefined ? {} : options.backoff, issues);
  checkSession(options.session, issues);
  check(options.clock === undefined || isClock(options.clock), 'clock must have now() and sleep()');
  check(
    options.logger === undefined || isLogger(options.logger),
    'logger must have info(), warn() and error()',
  );
  if (issues.length > 0) throw new ValidationError(issues.map((issue) => `worker: ${issue}`));
  // Durations only: a step of the wall clock must neither stop renewals nor end leases early.
  const clock = options.clock ?? SystemClock.carriedOn();
  return {
    concurrency,
    ack,
    wait,
    visibility,
    renew,
    renewAt,
    maxRenewals,
    backoff,
    session: options.session,
    clock,
    logger: options.logger ?? jsonLogger({ clock }),
  };
}

/**
 * The session options as the session's open will check them (`build.openSession`): refused
 * here, at the start, rather than by every receive of a worker that then runs nothing.
 */
function checkSession(session: unknown, issues: string[]): void {
  if (session === undefined) return;
  if (!isObject(session)) {
    issues.push('session must be an object of session options');
    return;
  }
  try {
    build.openSession(session);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    issues.push(...error.issues.map((issue) => `session: ${issue}`));
  }
}

const BACKOFF_OPTIONS = new Set(['baseDelay', 'maxDelay', 'factor', 'jitter']);

function resolveBackoff(options: BackoffOptions, issues: string[]): ResolvedBackoff {
  if (!isObject(options) || Array.isArray(options)) {
    issues.push('backoff must be an object');
    return { baseDelay: 1000, maxDelay: 60_000, factor: 2, jitter: 0.5 };
  }
  addUnknownOptions(issues, Object.keys(options), (key) => BACKOFF_OPTIONS.has(key), {
    describe: (shown) => `unknown option backoff.${shown}`,
    quote: false,
  });
  const {
    baseDelay = 1000,
    maxDelay = Math.max(60_000, baseDelay),
    factor = 2,
    jitter = 0.5,
  } = options;
  const baseValid = isInteger(baseDelay) && baseDelay >= 0;
  if (!baseValid) {
    issues.push(`backoff.baseDelay must be an integer ≥ 0 (ms), got ${show(baseDelay)}`);
  }
  // Every problem at once: a maxDelay given is checked whatever baseDelay is (against it when it
  // is valid); one left out follows baseDelay, so it is wrong only when baseDelay is.
  const maxGiven = options.maxDelay !== undefined;
  if ((maxGiven || baseValid) && (!isInteger(maxDelay) || maxDelay < (baseValid ? baseDelay : 0))) {
    issues.push(
      baseValid
        ? `backoff.maxDelay must be an integer ≥ baseDelay (${baseDelay} ms), got ${show(maxDelay)}`
        : `backoff.maxDelay must be an integer ≥ 0 (ms), got ${show(maxDelay)}`,
    );
  }
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1) {
    issues.push(`backoff.factor must be a finite number ≥ 1, got ${show(factor)}`);
  }
  if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1)) {
    issues.push(`backoff.jitter must be a number in [0, 1], got ${show(jitter)}`);
  }
  return { baseDelay, maxDelay, factor, jitter };
}

function isInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value);
}

function isPositiveInteger(value: unknown): value is number {
  return isInteger(value) && value > 0;
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

function isClock(value: unknown): boolean {
  return isObject(value) && ['now', 'sleep'].every((name) => hasMethod(value, name));
}

function isLogger(value: unknown): boolean {
  return isObject(value) && ['info', 'warn', 'error'].every((name) => hasMethod(value, name));
}

function hasMethod(value: object, name: string): boolean {
  return typeof (value as Record<string, unknown>)[name] === 'function';
}
