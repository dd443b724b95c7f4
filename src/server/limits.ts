import type { Queue } from '../broker/index.js';
import { DEFAULT_QUEUE_OPTIONS, ValidationError } from '../core/index.js';
import { ServerError } from './errors.js';

/** The server's limits. Sizes in bytes, times in milliseconds. */
export interface Limits {
  /** Largest payload of one job, as the bytes of its compact JSON text. Default 256 KiB. */
  maxPayloadBytes: number;
  /** Largest request body (a whole batch). Default 1 MiB. */
  maxBodyBytes: number;
  /** Most entries in one batch (publish, ack, nack, extend, receive max). Default 100. */
  maxBatch: number;
  /** Longest long-poll `wait` of one receive. Default 20 s. */
  maxWaitMs: number;
  /**
   * How long a client may take to send a request's headers; past it the server answers 408 and
   * closes the connection (a client that holds connections open by stalling). Default 10 s.
   */
  headersTimeoutMs: number;
  /** Most receives waiting at once; one more is refused with 429. Default 1000. */
  maxLongPolls: number;
  /** Longest visibility (lease) a receive, extend or queue may ask for. Default 12 h. */
  maxVisibilityMs: number;
  /** Longest delay of a publish or nack. Default 12 h. */
  maxDelayMs: number;
  /** Deepest nesting of arrays and objects in a request body. Default 64. */
  maxJsonDepth: number;
  /** Most subscriptions one stream connection holds at once. Default 64. */
  maxSubscriptions: number;
  /** Largest prefetch (unsettled pushed deliveries) of one subscription. Default 1000. */
  maxPrefetch: number;
  /**
   * Most bytes a stream connection may have queued unsent (a client that does not read): past
   * it the server stops pushing and reading; past it for streamHeartbeatMs it closes. 4 MiB.
   */
  maxStreamBufferBytes: number;
  /** How often each side of a stream pings; a connection silent for two of these ends. 15 s. */
  streamHeartbeatMs: number;
}

/** Extra time a request may take beyond the longest long poll before Node cuts it (408). */
export const REQUEST_TIMEOUT_MARGIN_MS = 15_000;

/** Each limit a server keeps where its options or configuration give none. */
export const DEFAULT_LIMITS: Readonly<Limits> = {
  maxPayloadBytes: 256 * 1024,
  maxBodyBytes: 1024 * 1024,
  maxBatch: 100,
  maxWaitMs: 20_000,
  headersTimeoutMs: 10_000,
  maxLongPolls: 1000,
  maxVisibilityMs: 12 * 60 * 60 * 1000,
  maxDelayMs: 12 * 60 * 60 * 1000,
  maxJsonDepth: 64,
  maxSubscriptions: 64,
  maxPrefetch: 1000,
  maxStreamBufferBytes: 4 * 1024 * 1024,
  streamHeartbeatMs: 15_000,
};

/** Counts receives that are waiting; refuses one more than the limit with TOO_MANY_REQUESTS. */
export class LongPollGate {
  private waiting = 0;

  constructor(private readonly limit: number) {}

  get size(): number {
    return this.waiting;
  }

  /** Takes a place; the returned function gives it back (once). */
  enter(): () => void {
    if (this.waiting >= this.limit) {
      throw new ServerError(
        'TOO_MANY_REQUESTS',
        `too many receives are waiting (limit ${this.limit}); retry later or use a shorter wait`,
      );
    }
    this.waiting += 1;
    let left = false;
    return () => {
      if (!left) this.waiting -= 1;
      left = true;
    };
  }
}

/**
 * Refuses a parsed body nested deeper than `maxDepth`, walking without recursion so that the
 * check itself cannot overflow the stack (deep values would break every later serialization),
 * and one holding a number that JSON.parse did not keep exactly: one beyond the doubles
 * (`1e400`, parsed as Infinity, which would be stored as null), a nonzero one too small for
 * them (`1e-400`, parsed as 0; seen only with `text`) or an integer beyond 2^53
 * (`12345678901234567890`, whose last digits are gone). Payloads are kept exactly or refused.
 * `text`, the JSON the value was parsed from, lets a refusal quote the number as it was sent.
 * A `__proto__` key, or a `constructor` holding `prototype`, is refused too (`prototypeKeys`
 * 'refuse'): merged into an object by whoever reads it, it would change what every object
 * inherits. 'keep' is for a protocol whose keys are names it looks up safely itself.
 * `subject` names the text in a refusal of a number: the body, or what the CLI read (`line 3`).
 */
export function checkJsonBody(
  value: unknown,
  maxDepth: number,
  prototypeKeys: 'refuse' | 'keep' = 'refuse',
  text?: string,
  subject = 'the body',
): void {
  let sawZero = false;
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (typeof item.value === 'number') {
      if (item.value === 0) sawZero = true;
      else checkExactNumber(item.value, text, subject);
      continue;
    }
    if (typeof item.value !== 'object' || item.value === null) continue;
    const depth = item.depth + 1;
    if (depth > maxDepth) {
      throw new ValidationError(`the body is nested more than ${maxDepth} levels deep`);
    }
    if (prototypeKeys === 'refuse') checkNoPrototypeKeys(item.value);
    for (const child of Object.values(item.value)) stack.push({ value: child, depth });
  }
  // A 0 may have been written as a number too small for a double: only the text tells.
  if (sawZero && text !== undefined && UNDERFLOW_HINT.test(text)) {
    const written = numbersIn(text).find(underflows);
    if (written !== undefined) {
      throw inexact(
        subject,
        `${shown(written)}, which is not 0 but too small for a double and reads as 0`,
      );
    }
  }
}

function checkNoPrototypeKeys(value: object): void {
  const ownConstructor = Object.hasOwn(value, 'constructor')
    ? (value as { constructor: unknown }).constructor
    : undefined;
  const key = Object.hasOwn(value, '__proto__')
    ? '"__proto__"'
    : typeof ownConstructor === 'object' &&
        ownConstructor !== null &&
        Object.hasOwn(ownConstructor, 'prototype')
      ? '"constructor" with "prototype"'
      : undefined;
  if (key !== undefined) {
    throw new ValidationError(
      `the body holds a ${key} key, refused: merged into an object it would change the prototype of every object`,
    );
  }
}

/**
 * A nonzero number that reads as 0 has a negative exponent or, written out, hundreds of zeros
 * after its point: the text of a body with neither is not searched.
 */
const UNDERFLOW_HINT = /\d[eE]-|\.0{300}/;
/** The strings (taken whole, so that no digits inside one are taken) and numbers of JSON text. */
const JSON_TOKEN = /"[^"\\]*(?:\\.[^"\\]*)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/** The numbers of well-formed JSON text, as written. */
function numbersIn(text: string): string[] {
  return (text.match(JSON_TOKEN) ?? []).filter((token) => !token.startsWith('"'));
}

/** `1e-400` reads as 0 though its digits are not all zeros (`0e-400` and `-0` are 0 as written). */
function underflows(written: string): boolean {
  return Number(written) === 0 && /[1-9]/.test(written.split(/[eE]/)[0] as string);
}

function checkExactNumber(value: number, text: string | undefined, subject: string): void {
  if (Number.isFinite(value) && (!Number.isInteger(value) || Number.isSafeInteger(value))) return;
  // Quoted as the client wrote it: the parsed value is not (123456789012345678 reads as
  // 123456789012345680).
  const written =
    text === undefined ? undefined : numbersIn(text).find((each) => Number(each) === value);
  if (!Number.isFinite(value)) {
    throw inexact(
      subject,
      written === undefined
        ? 'a number beyond the doubles (±1.8e308)'
        : `${shown(written)}, beyond the doubles (±1.8e308)`,
    );
  }
  throw inexact(
    subject,
    `${written === undefined ? String(value) : shown(written)}, a whole number beyond 2^53 - 1`,
  );
}

/** A number as written, cut short when long. */
function shown(written: string): string {
  return written.length <= 40 ? written : `${written.slice(0, 32)}… (${written.length} characters)`;
}

function inexact(subject: string, what: string): ValidationError {
  return new ValidationError(
    `${subject} holds ${what}: to be kept exactly, a number must be finite, not too small to ` +
      'tell from 0 and, when whole, at most 2^53 - 1 in magnitude; send others as strings',
  );
}

/** Refuses a job payload whose JSON text is larger than the limit. */
export function checkPayloadSize(payload: unknown, limit: number, where: string): void {
  if (payload === undefined) return;
  const bytes = Buffer.byteLength(JSON.stringify(payload), 'utf8');
  if (bytes > limit) {
    throw new ServerError(
      'PAYLOAD_TOO_LARGE',
      `${where} is ${bytes} bytes of JSON; the limit is ${limit}`,
    );
  }
}

/**
 * A queue this server creates has a lease (its visibility) no longer than a request may ask
 * for: a queue created without one would have the default, refused when that is above the limit
 * rather than made shorter unasked. The refusal, or undefined where the default is within it.
 */
export function defaultVisibilityProblem(limits: Limits): ValidationError | undefined {
  const lease = DEFAULT_QUEUE_OPTIONS.visibility;
  if (lease <= limits.maxVisibilityMs) return undefined;
  return new ValidationError(
    `visibility: a queue created without one gets the default of ${lease} ms, above this server's maxVisibilityMs of ${limits.maxVisibilityMs}; give the queue a visibility of at most ${limits.maxVisibilityMs}`,
  );
}

/**
 * A receive that names no visibility gets its queue's, which is held to the limit as a
 * visibility it named would be: a queue made elsewhere (in-process, by a server of a higher
 * limit, before the limit was lowered) may have a longer one. Refused, not shortened, so that
 * no consumer holds a lease shorter than its queue says without being told.
 */
export async function checkQueueVisibility(queue: Queue, limits: Limits): Promise<void> {
  const visibility = await leaseOf(queue);
  if (visibility <= limits.maxVisibilityMs) return;
  throw new ValidationError(
    `visibility: queue ${queue.name} leases for ${visibility} ms when a receive names no visibility, above this server's maxVisibilityMs of ${limits.maxVisibilityMs}; name a visibility of at most ${limits.maxVisibilityMs}, or lower the queue's`,
  );
}

/** How long a queue's lease, as last read, answers for it (a read per receive would cost a transaction). */
const LEASE_READ_MS = 1000;
const leases = new WeakMap<Queue, { visibility: number; readAt: number }>();

/**
 * The queue's visibility, read at most once a second per queue handle. A second measured on the
 * monotonic clock: on the wall clock, one stepped back kept the value read before the step for
 * as long as the step (an hour back: a visibility the operator changed meanwhile unseen for an
 * hour, receives refused or allowed by the old one).
 */
export async function leaseOf(queue: Queue): Promise<number> {
  const now = performance.now();
  const known = leases.get(queue);
  if (known !== undefined && now - known.readAt < LEASE_READ_MS) return known.visibility;
  const { visibility } = await queue.options();
  leases.set(queue, { visibility, readAt: now });
  return visibility;
}
