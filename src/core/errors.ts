import { cutBefore } from './cut.js';

/**
 * The closed set of leaseq errors. Callers branch on `code`, which never changes once
 * released; messages are for people and may be reworded.
 */
export type LeaseqErrorCode =
  | 'INVALID_CLOCK'
  | 'INVALID_ARGUMENT'
  | 'SESSION_CLOSED'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'STORAGE_UNAVAILABLE'
  | 'STORAGE_LOCKED'
  | 'SCHEMA_TOO_NEW'
  | 'CLOSED'
  | 'UNSUPPORTED'
  | 'QUEUE_FULL';

/** An error with a stable `code` to branch on; its name is its class's. */
export abstract class CodedError<Code extends string> extends Error {
  /** The stable code to branch on; it never changes once released. */
  abstract readonly code: Code;
  /**
   * `true` when the call that failed may or may not have taken effect: the storage or the
   * connection failed while its commit, or its request, was under way (a publish without an id
   * retried blindly could then be published twice). Absent otherwise: the call took no effect
   * (see `mayHaveTakenEffect()` for the errors this does not cover).
   */
  declare readonly mayHaveTakenEffect?: true;
  constructor(
    message: string,
    options?: {
      /** What caused it, kept as the error's `cause`. */
      cause?: unknown;
      /** The call may or may not have taken effect: sets `mayHaveTakenEffect`. */
      mayHaveTakenEffect?: boolean;
    },
  ) {
    super(message, options);
    this.name = new.target.name;
    if (options?.mayHaveTakenEffect === true) markMayHaveTakenEffect(this);
  }
}

/**
 * Whether the call that failed with `error` may or may not have taken effect (its
 * `mayHaveTakenEffect`): its commit or request was under way when the storage or the connection
 * failed, so a call that is not idempotent (a publish without an id) must not be retried
 * blindly. False otherwise: an error of a leaseq call without it says the call took no effect (a
 * redrive, purge or moveJobs taking steps: none beyond its `doneCount`), except an `INTERNAL`
 * error (a bug) and an answer no leaseq server gave (`RemoteError` `HTTP_<status>`), which say
 * nothing either way.
 */
export function mayHaveTakenEffect(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  return (error as { mayHaveTakenEffect?: unknown }).mayHaveTakenEffect === true;
}

/**
 * Gives `error` `mayHaveTakenEffect: true` (enumerable, as the other fields an error carries).
 * Internal: not exported from the package.
 */
export function markMayHaveTakenEffect<E extends Error>(error: E): E {
  Object.defineProperty(error, 'mayHaveTakenEffect', {
    value: true,
    enumerable: true,
    writable: false,
    configurable: true,
  });
  return error;
}

/** An error of the queue's contract (SPEC.md), by `LeaseqErrorCode`. */
export abstract class LeaseqError extends CodedError<LeaseqErrorCode> {}

/** R2: `now` is not an integer ≥ 0, or it is behind the queue's clock. Nothing changed. */
export class ClockError extends LeaseqError {
  readonly code = 'INVALID_CLOCK' as const;
  constructor(
    /** The `now` that was refused, as given. */
    readonly now: unknown,
    /** The queue's clock when it was refused. */
    readonly queueTime: number,
  ) {
    super(
      typeof now === 'number' && Number.isSafeInteger(now) && now >= 0
        ? `now (${now}) is behind the queue time (${queueTime}); time never goes back`
        : `now must be a safe integer ≥ 0, got ${show(now)}`,
    );
  }
}

/** A bad argument (all problems listed in `issues`). Thrown before anything changes. */
export class ValidationError extends LeaseqError {
  readonly code = 'INVALID_ARGUMENT' as const;
  /** Every problem found, one sentence each. */
  readonly issues: readonly string[];
  constructor(
    issues: string | readonly string[],
    options?: {
      /** What caused it, kept as the error's `cause`. */
      cause?: unknown;
    },
  ) {
    const list = typeof issues === 'string' ? [issues] : issues;
    super(list.join('; '), options);
    this.issues = list;
  }
}

/** R16: the named session was closed or timed out. Time still advanced (R3). */
export class SessionClosedError extends LeaseqError {
  readonly code = 'SESSION_CLOSED' as const;
  constructor(
    /** The session's id. */
    readonly session: string,
  ) {
    super(`session ${session} has ended`);
  }
}

/** A named thing (queue, job) does not exist. */
export class NotFoundError extends LeaseqError {
  readonly code = 'NOT_FOUND' as const;
}

/** The request contradicts existing state (e.g. a queue re-created with other options). */
export class ConflictError extends LeaseqError {
  readonly code = 'CONFLICT' as const;
}

/** A dead-letter queue that would lead back to its queue (R26): `chain` is the way round. */
export class DeadLetterLoopError extends ConflictError {
  constructor(
    /** The way round: the queue whose deadLetterQueue would loop first, in dead-letter order. */
    readonly chain: readonly string[],
  ) {
    super(`deadLetterQueue of ${chain[0]} would loop back to it (${chain.join(' → ')})`);
  }
}

/**
 * The storage cannot be reached or read (file unreadable, database down, wrong URL). With
 * `mayHaveTakenEffect`, it failed while the call's commit was under way (a connection broken
 * after its COMMIT went out, a sync of the committed WAL failing): the call may or may not have
 * taken effect. Without, it failed before: nothing of the call was written.
 */
export class StorageUnavailableError extends LeaseqError {
  readonly code = 'STORAGE_UNAVAILABLE' as const;
}

/** The storage is held by another process (a locked SQLite file). */
export class StorageLockedError extends LeaseqError {
  readonly code = 'STORAGE_LOCKED' as const;
}

/** The storage was written by a newer leaseq; this code will not touch it. */
export class SchemaTooNewError extends LeaseqError {
  readonly code = 'SCHEMA_TOO_NEW' as const;
  constructor(
    /** The schema version the storage has. */
    readonly found: number,
    /** The newest schema version this leaseq knows. */
    readonly supported: number,
    target: string,
  ) {
    super(
      `${target} has schema version ${found}, but this leaseq supports up to ${supported}; upgrade leaseq`,
    );
  }
}

/** The engine, broker or worker was closed. */
export class ClosedError extends LeaseqError {
  readonly code = 'CLOSED' as const;
}

/** A value as a message shows it: strings quoted (long ones cut), other kinds by their kind. */
export function show(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  try {
    if (Array.isArray(value)) return 'an array';
  } catch {
    // A revoked Proxy: Array.isArray throws on it, and showing a value must not throw.
  }
  return typeof value;
}

/** The engine or transport cannot do this (e.g. transactions on the memory engine). */
export class UnsupportedError extends LeaseqError {
  readonly code = 'UNSUPPORTED' as const;
}

/**
 * R31: the publish would leave the queue with more ready jobs than its `maxLength` (overflow
 * `reject`). Nothing was published; the same publish succeeds once consumers took jobs.
 */
export class QueueFullError extends LeaseqError {
  readonly code = 'QUEUE_FULL' as const;
}

/** At most this many unknown names (fields, options) are named in one error; the rest are counted. */
export const MAX_UNKNOWN_NAMES_SHOWN = 10;

/** The most of an unknown name an error shows, in characters (UTF-16 code units). */
export const MAX_NAME_SHOWN = 64;

/**
 * A name the caller gave that nothing knows, as an error shows it: quoted (`quote`) or as it is,
 * and past MAX_NAME_SHOWN characters cut (never inside a surrogate pair), followed by how long it
 * was — a name of a megabyte is not echoed whole.
 */
export function showName(name: string, quote = true): string {
  if (name.length <= MAX_NAME_SHOWN) return quote ? JSON.stringify(name) : name;
  const cut = `${name.slice(0, cutBefore(name, MAX_NAME_SHOWN))}…`;
  return `${quote ? JSON.stringify(cut) : cut} (${groupDigits(name.length)} characters)`;
}

/**
 * Adds the issues of unknown names to `issues`: the first MAX_UNKNOWN_NAMES_SHOWN as they come,
 * the rest counted in one issue where the next would have stood (`and 4990 more unknown
 * fields`), so a body or frame of thousands of them is not echoed whole. Every door that refuses
 * unknown names (the library's operations and options, HTTP bodies, stream frames) counts them so.
 */
export class UnknownNames {
  private count = 0;
  private summaryAt = -1;

  constructor(private readonly issues: string[]) {}

  /** One unknown name; `issue` (which should show it by `showName`) is built only if it is shown. */
  add(what: string, issue: () => string): void {
    this.count += 1;
    if (this.count <= MAX_UNKNOWN_NAMES_SHOWN) {
      this.issues.push(issue());
      return;
    }
    const more = this.count - MAX_UNKNOWN_NAMES_SHOWN;
    const summary = `and ${groupDigits(more)} more ${what}${more === 1 ? '' : 's'}`;
    if (this.summaryAt === -1) {
      this.summaryAt = this.issues.length;
      this.issues.push(summary);
    } else this.issues[this.summaryAt] = summary;
  }
}

/** How `addUnknownOptions` words an unknown name. */
export interface UnknownOptionWords {
  /** What one is called, `unknown option` by default (the count says `and 4 more …s`). */
  what?: string;
  /** The issue of one, given the name as shown; by default `${what} ${shown}`. */
  describe?: (shown: string) => string;
  /** Whether the name is shown quoted, as JSON (default true). */
  quote?: boolean;
}

/**
 * Adds to `issues` one for each of `names` that `isKnown` refuses, counted as UnknownNames
 * does: the options of a library call, refused as every door refuses unknown names.
 */
export function addUnknownOptions(
  issues: string[],
  names: Iterable<string>,
  isKnown: (name: string) => boolean,
  words: UnknownOptionWords = {},
): void {
  const { what = 'unknown option', describe = (shown) => `${what} ${shown}`, quote = true } = words;
  const unknownNames = new UnknownNames(issues);
  for (const name of names) {
    if (!isKnown(name)) unknownNames.add(what, () => describe(showName(name, quote)));
  }
}

/** 4993123 → "4,993,123", whatever the process's locale. */
export function groupDigits(count: number): string {
  return String(count).replace(/\B(?=(\d{3})+$)/g, ',');
}
