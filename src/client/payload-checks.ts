import { ValidationError } from '../core/index.js';
import type { WireError, WireOperation, WireOutcome } from '../wire/index.js';

/**
 * The levels around a job's payload in what carries it: an HTTP batch body or a stream batch
 * frame, its list of operations, the operation, its jobs, the job.
 */
const LEVELS_AROUND_PAYLOAD = 5;

/** What a payload is as JSON, as far as a server refuses a request for it. */
export interface PayloadShape {
  /** How deeply it nests objects and arrays: 0 for a string, a number, …; 1 for `{}`. */
  depth: number;
  /** Its first whole number beyond 2^53 - 1 in magnitude, which JSON would not keep exactly. */
  inexact?: number;
  /** Its first key that would change prototypes where merged: `"__proto__"`, or `"constructor"` holding `"prototype"`. */
  prototypeKey?: string;
}

/**
 * `payload` as JSON.stringify writes it (toJSON called, boxed numbers unboxed, functions and
 * undefined left out, a `JSON.rawJSON` value as its text), walked without recursion. It has been
 * written once already, so it holds no cycle. Numbers, strings and the like inside are looked at
 * in place: a large array of them costs no entry each.
 */
export function payloadShape(payload: unknown): PayloadShape {
  const shape: PayloadShape = { depth: 0 };
  const stack: { value: object; depth: number }[] = [];
  const take = (value: unknown, depth: number) => {
    if (typeof value === 'number') {
      if (shape.inexact === undefined && Number.isInteger(value) && !Number.isSafeInteger(value)) {
        shape.inexact = value;
      }
    } else if (typeof value === 'object' && value !== null) {
      if (isRawJson(value)) take(rawNumber(value), depth);
      else stack.push({ value, depth });
    }
  };
  take(asJson(payload, ''), 0);
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const depth = item.depth + 1;
    if (depth > shape.depth) shape.depth = depth;
    const { value } = item;
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) take(asJson(value[index], index), depth);
      continue;
    }
    for (const key of Object.keys(value)) {
      const child = asJson((value as Record<string, unknown>)[key], key);
      if (!written(child)) continue;
      if (shape.prototypeKey === undefined) {
        if (key === '__proto__') shape.prototypeKey = '"__proto__"';
        else if (key === 'constructor' && holdsPrototype(child)) {
          shape.prototypeKey = '"constructor" with "prototype"';
        }
      }
      take(child, depth);
    }
  }
  return shape;
}

/** `JSON.isRawJSON`, where the runtime has it (Node 21 and later). */
const isRawJsonOf = (JSON as { isRawJSON?: (value: unknown) => boolean }).isRawJSON;

/** A `JSON.rawJSON` value: written as its text, a leaf (a number, a string, true, false, null). */
function isRawJson(value: object): value is { rawJSON: string } {
  return isRawJsonOf?.(value) === true;
}

/** The number a raw JSON text is, if it is one (else undefined: nothing to check). */
function rawNumber(value: { rawJSON: string }): number | undefined {
  const number = Number(value.rawJSON);
  return Number.isNaN(number) ? undefined : number;
}

/**
 * `value` as JSON.stringify takes it: its toJSON's answer (called with its key, as a string),
 * a boxed primitive unboxed.
 */
function asJson(value: unknown, key: string | number): unknown {
  let json = value;
  if ((typeof json === 'object' && json !== null) || typeof json === 'bigint') {
    const toJSON = (json as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') json = toJSON.call(json, String(key));
  }
  if (json instanceof Number || json instanceof String || json instanceof Boolean) {
    json = json.valueOf();
  }
  return json;
}

/** Whether JSON.stringify writes a property holding `value` (as JSON already). */
function written(value: unknown): boolean {
  return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
}

function holdsPrototype(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.keys(value).includes('prototype') &&
    written(asJson((value as { prototype?: unknown }).prototype, 'prototype'))
  );
}

/**
 * Refuses a publish whose payload a server refuses the whole request or frame for (every
 * call coalesced with it failing too): a whole number beyond 2^53 - 1, which JSON does not keep
 * exactly, or a key that would change prototypes where merged.
 */
export function checkPayloadsKept(jobs: readonly { payload?: unknown }[]): void {
  for (const [index, job] of jobs.entries()) {
    if (job.payload === undefined) continue;
    const { inexact, prototypeKey } = payloadShape(job.payload);
    const label = jobs.length === 1 ? 'job' : `jobs[${index}]`;
    if (inexact !== undefined) {
      throw new ValidationError(
        `${label}.payload holds ${inexact}, a whole number beyond 2^53 - 1, which the server refuses as it could not keep it exactly: send such numbers as strings`,
      );
    }
    if (prototypeKey !== undefined) {
      throw new ValidationError(
        `${label}.payload holds a ${prototypeKey} key, which the server refuses: merged into an object it would change the prototype of every object`,
      );
    }
  }
}

/**
 * A publish's refusal with its jobs named as the caller's publish names them (`job.payload`, or
 * `jobs[1].payload` in a batch), as the client's own checks name them: the server names a job by
 * the place of its publish among the operations of the request or frame
 * (`operations[2].jobs[1].payload`), which holds the calls of other callers coalesced with it.
 */
export function inOwnPublish(error: WireError, jobs: number): WireError {
  const message = error.message.replace(/\boperations\[\d+\]\.jobs\[(\d+)\]/g, (_, index) =>
    jobs === 1 ? 'job' : `jobs[${index}]`,
  );
  return message === error.message ? error : { ...error, message };
}

/**
 * The answer of a `publish` whose payload would make its request body deeper than
 * `maxJsonDepth`, refused as the server refuses it; undefined for any other operation.
 */
function tooDeep(operation: WireOperation, maxJsonDepth: number): WireOutcome | undefined {
  if (operation.type !== 'publish' || !Array.isArray(operation.jobs)) return undefined;
  const jobs = operation.jobs as { payload?: unknown }[];
  const room = maxJsonDepth - LEVELS_AROUND_PAYLOAD;
  for (const [index, job] of jobs.entries()) {
    const { depth } = payloadShape(job.payload);
    if (depth > room) {
      const label = jobs.length === 1 ? 'job' : `jobs[${index}]`;
      return {
        ok: false,
        error: {
          code: 'INVALID_ARGUMENT',
          message: `${label}.payload is nested ${depth} levels deep; the server takes requests nested at most ${maxJsonDepth} levels deep (its maxJsonDepth), ${Math.max(0, room)} of them for a payload`,
        },
      };
    }
  }
  return undefined;
}

/**
 * Sends `operations` by `send`, but for those `tooDeep` refuses, answered with their refusal,
 * unsent: sent, they would make the server refuse the whole request or frame, and so every
 * call of other callers coalesced with them. Infinity: the server said no depth, nothing checked.
 */
export async function withoutTooDeep(
  operations: readonly WireOperation[],
  maxJsonDepth: number,
  send: (operations: readonly WireOperation[]) => Promise<WireOutcome[]>,
): Promise<WireOutcome[]> {
  if (maxJsonDepth === Number.POSITIVE_INFINITY) return send(operations);
  const refusals = operations.map((operation) => tooDeep(operation, maxJsonDepth));
  if (refusals.every((refusal) => refusal === undefined)) return send(operations);
  const sent = operations.filter((_, index) => refusals[index] === undefined);
  const answers = sent.length === 0 ? [] : await send(sent);
  let next = 0;
  return refusals.map((refusal) => refusal ?? (answers[next++] as WireOutcome));
}
