import { show, ValidationError } from './errors.js';
import type { PublishJob } from './operations.js';

/**
 * Payloads are JSON (SPEC: opaque JSON). Engines keep them as JSON text, so what a consumer
 * gets is a copy of what was published, never the publisher's object, and a value that is
 * not JSON is refused at publish.
 */
export function encodePayload(payload: unknown, at: string): string | null {
  return encodeAt(payload, at, 0, 1);
}

/** A payload from its JSON text; null (no payload) is undefined. */
export function decodePayload(text: string | null): unknown {
  return text === null ? undefined : JSON.parse(text);
}

/** The jobs of a publish with their payloads as JSON text (null for none); labels name the entry. */
export function encodeJobs(jobs: readonly PublishJob[]): PublishJob[] {
  const encoded: PublishJob[] = new Array(jobs.length);
  for (let i = 0; i < jobs.length; i++) {
    const job = jobs[i] as PublishJob;
    encoded[i] = {
      id: job.id,
      payload: encodeAt(job.payload, undefined, i, jobs.length),
      delay: job.delay,
      priority: job.priority,
      group: job.group,
      expiresAt: job.expiresAt,
    };
  }
  return encoded;
}

/**
 * How a queue keeps the payloads it is given: `store` turns each job's payload into what the
 * queue holds (it may refuse one with a ValidationError, before anything changed), `load` turns
 * what it holds into what it answers with, once per answer.
 */
export interface PayloadCodec {
  /** `index` of `count`: the job's place in its publish, to name it in an error. */
  store(payload: unknown, index: number, count: number): unknown;
  /** What the queue answers for a payload it holds. */
  load(stored: unknown): unknown;
}

/**
 * Payloads kept as JSON text (null for none), as the SQL engines keep them: the queue holds a
 * copy its publisher cannot change afterwards, and every answer is a copy of its own.
 */
export const JSON_PAYLOADS: PayloadCodec = Object.freeze({
  store: (payload: unknown, index: number, count: number) =>
    encodeAt(payload, undefined, index, count),
  load: (stored: unknown) => (typeof stored === 'string' ? JSON.parse(stored) : undefined),
});

/** The JSON text of a payload; the error names it by `at`, or else as entry `index` of `count`. */
function encodeAt(
  payload: unknown,
  at: string | undefined,
  index: number,
  count: number,
): string | null {
  if (payload === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(payload);
  } catch (error) {
    throw new ValidationError(
      `${label(at, index, count)}.payload is not JSON: ${thrownText(error)}`,
    );
  }
  if (text === undefined)
    throw new ValidationError(`${label(at, index, count)}.payload is not JSON`);
  return text;
}

/**
 * What JSON.stringify threw: its message, else what was thrown (a payload's toJSON, a getter or
 * a Proxy may throw anything: null, a string, an object without a prototype). Never throws.
 */
function thrownText(error: unknown): string {
  try {
    const message = (error as { message?: unknown } | null | undefined)?.message;
    if (typeof message === 'string') return message;
  } catch {
    // A getter or Proxy trap of `message` that throws: said by its kind below.
  }
  return `${show(error)} was thrown`;
}

function label(at: string | undefined, index: number, count: number): string {
  return at ?? (count === 1 ? 'job' : `jobs[${index}]`);
}
