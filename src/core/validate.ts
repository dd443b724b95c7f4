import { ClockError, show, showName, UnknownNames, ValidationError } from './errors.js';

export { show };

import { meansAbsent, OVERFLOW_MODES, QUEUE_NAME } from './queue-options.js';
import { isStorableText, MAX_REASON_LENGTH, STORABLE_TEXT_RULE } from './text.js';
import type {
  DeadLetterPageOptions,
  DeliveryPageOptions,
  InspectOptions,
  QueueOptions,
  ResolvedQueueOptions,
} from './types.js';

/** The longest job id or message group, in characters (UTF-16 code units). */
export const MAX_ID_LENGTH = 256;

/** R2: `now` must be a safe integer ≥ 0 and not behind the clock. */
/** Whether `now` is a time at all (R2): a safe integer ≥ 0, whatever the queue's clock. */
export function isTime(now: unknown): now is number {
  return typeof now === 'number' && Number.isSafeInteger(now) && now >= 0;
}

export function checkNow(now: unknown, clock: number): asserts now is number {
  if (!isTime(now) || now < clock) {
    throw new ClockError(now, clock);
  }
}

/** Collects every problem of one call, so the error reports them all at once. */
export class Problems {
  readonly list: string[] = [];
  private unknownNames: UnknownNames | undefined;

  positiveInteger(name: string, value: unknown): void {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
      this.list.push(`${name} must be a positive integer, got ${show(value)}`);
    }
  }

  positiveIntegerOrInfinity(name: string, value: unknown): void {
    if (value === Number.POSITIVE_INFINITY) return;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
      this.list.push(
        `${name} must be a positive integer, or Infinity for none (null in JSON), got ${show(value)}`,
      );
    }
  }

  nonNegativeInteger(name: string, value: unknown): void {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      this.list.push(`${name} must be an integer ≥ 0, got ${show(value)}`);
    }
  }

  /** R23: an integer 0 (lowest, the default) to 9 (highest). */
  priority(name: string, value: unknown): void {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > 9) {
      this.list.push(`${name} must be an integer from 0 to 9, got ${show(value)}`);
    }
  }

  boolean(name: string, value: unknown): void {
    if (typeof value !== 'boolean') this.list.push(`${name} must be a boolean, got ${show(value)}`);
  }

  id(name: string, value: unknown): void {
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ID_LENGTH) {
      this.list.push(
        `${name} must be a string of 1 to ${MAX_ID_LENGTH} characters, got ${show(value)}`,
      );
    } else if (!isStorableText(value)) {
      this.list.push(`${name} must be ${STORABLE_TEXT_RULE} (R18), got ${show(value)}`);
    }
  }

  reason(name: string, value: unknown): void {
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_REASON_LENGTH) {
      this.list.push(
        `${name} must be a string of 1 to ${MAX_REASON_LENGTH} characters, got ${show(value)}`,
      );
    } else if (!isStorableText(value)) {
      this.list.push(`${name} must be ${STORABLE_TEXT_RULE} (R18), got ${show(value)}`);
    }
  }

  queueName(name: string, value: unknown): void {
    if (typeof value !== 'string' || !QUEUE_NAME.test(value)) {
      this.list.push(`${name} must be a queue name, got ${show(value)}`);
    }
  }

  object(name: string, value: unknown): value is Record<string, unknown> | undefined {
    if (value === undefined) return true;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      this.list.push(`${name} must be an object, got ${show(value)}`);
      return false;
    }
    return true;
  }

  /**
   * A name nothing knows (`what`: `unknown field`, `unknown queue option`…), of `of` where
   * given: the first few named, each cut to its first characters, the rest counted (see
   * UnknownNames).
   */
  unknown(what: string, name: string, of?: string): void {
    this.unknownNames ??= new UnknownNames(this.list);
    this.unknownNames.add(
      what,
      () => `${what} ${showName(name)}${of === undefined ? '' : ` of ${of}`}`,
    );
  }

  throwIfAny(): void {
    if (this.list.length > 0) throw new ValidationError(this.list);
  }
}

/**
 * The options a queue has where none are given; times in ticks (above the core, ms). Frozen: an
 * assignment to it would change every queue made after it in the process.
 */
export const DEFAULT_QUEUE_OPTIONS: Readonly<ResolvedQueueOptions> = Object.freeze({
  visibility: 30_000,
  prefetch: Number.POSITIVE_INFINITY,
  maxDeliveries: 10,
  maxLease: Number.POSITIVE_INFINITY,
  dedupWindow: 0,
});

const QUEUE_OPTION_NAMES = new Set([
  ...Object.keys(DEFAULT_QUEUE_OPTIONS),
  'deadLetterQueue',
  'paused',
  'retention',
  'maxLength',
  'overflow',
]);

/**
 * The options after an update: only the options named change, and one given as `undefined`
 * counts as not given (it keeps its value; `null` is how an option is cleared). Checked as
 * resolveQueueOptions checks; anything but an object is refused.
 */
export function updatedQueueOptions(
  current: ResolvedQueueOptions,
  change: QueueOptions,
): ResolvedQueueOptions {
  // Unlike a queue's options at creation, an update names some: undefined is not "none".
  if (typeof change !== 'object' || change === null || Array.isArray(change)) {
    throw new ValidationError(`options must be an object, got ${show(change)}`);
  }
  const merged: Record<string, unknown> = { ...current };
  for (const [name, value] of Object.entries(change)) {
    // An unknown name is kept, whatever its value, so that it is refused.
    if (value !== undefined || !QUEUE_OPTION_NAMES.has(name)) merged[name] = value;
  }
  return resolveQueueOptions(merged);
}

/** Fills defaults and checks every queue option; unknown names are refused too. */
export function resolveQueueOptions(options: QueueOptions | undefined): ResolvedQueueOptions {
  const problems = new Problems();
  if (!problems.object('options', options)) problems.throwIfAny();
  for (const name of Object.keys(options ?? {})) {
    if (!QUEUE_OPTION_NAMES.has(name)) problems.unknown('unknown queue option', name);
  }
  const resolved: Record<string, unknown> = { ...DEFAULT_QUEUE_OPTIONS };
  for (const [name, value] of Object.entries(options ?? {})) {
    if (value !== undefined && QUEUE_OPTION_NAMES.has(name)) resolved[name] = value;
  }
  // An option that means what leaving it out means is left out (see ResolvedQueueOptions).
  for (const [name, value] of Object.entries(resolved)) {
    if (meansAbsent(name, value)) delete resolved[name];
  }
  problems.positiveInteger('visibility', resolved.visibility);
  problems.positiveIntegerOrInfinity('prefetch', resolved.prefetch);
  problems.positiveIntegerOrInfinity('maxDeliveries', resolved.maxDeliveries);
  problems.positiveIntegerOrInfinity('maxLease', resolved.maxLease);
  problems.nonNegativeInteger('dedupWindow', resolved.dedupWindow);
  if (resolved.deadLetterQueue !== undefined) {
    problems.queueName('deadLetterQueue', resolved.deadLetterQueue);
  }
  if (resolved.paused !== undefined) problems.boolean('paused', resolved.paused);
  if (resolved.retention !== undefined) problems.positiveInteger('retention', resolved.retention);
  if (resolved.maxLength !== undefined) problems.positiveInteger('maxLength', resolved.maxLength);
  if (resolved.overflow !== undefined && !OVERFLOW_MODES.includes(resolved.overflow as never)) {
    problems.list.push(
      `overflow must be ${OVERFLOW_MODES.map((mode) => `'${mode}'`).join(' or ')}, got ${show(resolved.overflow)}`,
    );
  }
  problems.throwIfAny();
  return resolved as unknown as ResolvedQueueOptions;
}

const SESSION_ID = /^s([1-9][0-9]*)$/;

/** The id of a queue's n-th session. */
export function sessionIdOf(sessionNumber: number): string {
  return `s${sessionNumber}`;
}

/**
 * A session id the queue never issued (it has issued numbers below `nextSessionNumber`) is a
 * bad argument, refused before R3; an ended one is checked after it (SessionClosedError).
 */
export function checkSessionKnown(sessionId: unknown, nextSessionNumber: number): void {
  const match = typeof sessionId === 'string' ? SESSION_ID.exec(sessionId) : null;
  if (match === null || Number(match[1]) >= nextSessionNumber) {
    throw new ValidationError(`unknown session ${show(sessionId)}`);
  }
}

/** The most dead letters one page holds. */
export const MAX_DEAD_LETTER_PAGE = 1000;
/** How many dead letters a page holds when the caller does not say. */
export const DEFAULT_DEAD_LETTER_PAGE = 100;
/**
 * Characters of payload JSON text past which a page of dead letters read with their payloads
 * ends, whatever its `limit` (R34): the job that reaches it is the page's last, so a page holds
 * at least one job. A page of 1,000 jobs of 100 KB was 100 MB read, parsed and sent in one
 * piece (a server's event loop held for seconds), and of 600 jobs of 1 MB longer than a
 * JavaScript string can be (a server answered `INTERNAL`).
 */
export const DEAD_LETTER_PAGE_CHARS = 8 * 1024 * 1024;

/** The most live deliveries one page holds (as many as a page of dead letters). */
export const MAX_DELIVERY_PAGE = MAX_DEAD_LETTER_PAGE;
/** How many live deliveries a page holds when the caller does not say. */
export const DEFAULT_DELIVERY_PAGE = DEFAULT_DEAD_LETTER_PAGE;

/**
 * A page request checked: its limit, the position in the queue's order of deaths (its dead
 * letters' sequence numbers, from 1) after which it starts, 0 for the first page, and whether
 * payloads are read. A cursor is that number written in decimal: what a page's `next` says.
 */
export function checkDeadLetterPage(options: unknown): {
  /** The most dead letters of the page. */
  limit: number;
  /** The sequence number of the death the page starts after; 0 for the first page. */
  after: number;
  /** Whether the dead letters' payloads are read. */
  payloads: boolean;
} {
  const problems = new Problems();
  if (options === undefined) return { limit: DEFAULT_DEAD_LETTER_PAGE, after: 0, payloads: true };
  if (!problems.object('dead letter page options', options)) problems.throwIfAny();
  const {
    limit = DEFAULT_DEAD_LETTER_PAGE,
    after,
    payloads = true,
    ...rest
  } = options as DeadLetterPageOptions;
  for (const name of Object.keys(rest)) problems.unknown('unknown dead letter page option', name);
  checkPageLimit(problems, limit, MAX_DEAD_LETTER_PAGE);
  const position = pagePosition(problems, after);
  problems.boolean('payloads', payloads);
  problems.throwIfAny();
  return { limit, after: position, payloads };
}

/**
 * A page of live deliveries checked, as a page of dead letters is: its limit, and the token
 * after which it starts, 0 for the first page. A cursor is that token in decimal.
 */
export function checkDeliveryPage(options: unknown): {
  /** The most live deliveries of the page. */
  limit: number;
  /** The token the page starts after; 0 for the first page. */
  after: number;
} {
  const problems = new Problems();
  if (options === undefined) return { limit: DEFAULT_DELIVERY_PAGE, after: 0 };
  if (!problems.object('delivery page options', options)) problems.throwIfAny();
  const { limit = DEFAULT_DELIVERY_PAGE, after, ...rest } = options as DeliveryPageOptions;
  for (const name of Object.keys(rest)) problems.unknown('unknown delivery page option', name);
  checkPageLimit(problems, limit, MAX_DELIVERY_PAGE);
  const position = pagePosition(problems, after);
  problems.throwIfAny();
  return { limit, after: position };
}

function checkPageLimit(problems: Problems, limit: unknown, max: number): void {
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > max) {
    problems.list.push(`limit must be an integer from 1 to ${max}, got ${show(limit)}`);
  }
}

/** The position a cursor names (a positive integer in decimal), 0 without one. */
function pagePosition(problems: Problems, after: unknown): number {
  if (after === undefined) return 0;
  const position =
    typeof after === 'string' && /^[1-9][0-9]{0,15}$/.test(after) ? Number(after) : 0;
  if (!Number.isSafeInteger(position) || position < 1) {
    problems.list.push(`after must be the next of an earlier page, got ${show(after)}`);
    return 0;
  }
  return position;
}

/** An inspect's options checked: the most entries of each list, undefined for all of them. */
export function checkInspectOptions(options: unknown): number | undefined {
  if (options === undefined) return undefined;
  const problems = new Problems();
  if (!problems.object('inspect options', options)) problems.throwIfAny();
  const { limit, ...rest } = options as InspectOptions;
  for (const name of Object.keys(rest)) problems.unknown('unknown inspect option', name);
  if (limit !== undefined) problems.positiveInteger('limit', limit);
  problems.throwIfAny();
  return limit;
}

/** The cursor of the page that starts after the dead letter at `position`. */
export function deadLetterCursor(position: number): string {
  return String(position);
}

/** The cursor of the page that starts after the live delivery of `token`. */
export function deliveryCursor(token: number): string {
  return String(token);
}
