import { expect } from 'vitest';
import { UnknownDeliveryError } from '../../src/client/index.js';
import type {
  DeadLetter,
  InspectView,
  LeaseqError,
  LeaseqErrorCode,
  QueueStats,
} from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';

type ErrorClass<T> = abstract new (...args: never[]) => T;

/**
 * Expects `call` to return a promise that rejects with an instance of `errorClass` carrying
 * `code`, and returns the error. A synchronous throw is a failure: the engine API is async.
 */
export async function expectRejection<T extends LeaseqError>(
  call: () => Promise<unknown>,
  errorClass: ErrorClass<T>,
  code: LeaseqErrorCode,
): Promise<T> {
  let pending: Promise<unknown>;
  try {
    pending = call();
  } catch (error) {
    throw new Error(`expected a rejected promise, but the call threw synchronously: ${error}`);
  }
  let outcome: { value: unknown } | undefined;
  try {
    outcome = { value: await pending };
  } catch (error) {
    expect(error).toBeInstanceOf(errorClass);
    expect((error as T).code).toBe(code);
    return error as T;
  }
  throw new Error(`expected a ${code} rejection, got ${JSON.stringify(outcome.value)}`);
}

/**
 * Settles a token no delivery of the queue ever had. An engine answers it as stale (`stale`:
 * false, or null for extend) and counts it (R8); through the HTTP client it never reaches the
 * server: the client holds no receipt for it and refuses it with an UnknownDeliveryError.
 * Returns how many stale calls the queue counted (1 or 0).
 */
export async function settleNeverIssued(
  h: { viaClient: boolean },
  call: () => Promise<unknown>,
  stale: unknown,
): Promise<number> {
  if (!h.viaClient) {
    expect(await call()).toEqual(stale);
    return 1;
  }
  await expect(call()).rejects.toBeInstanceOf(UnknownDeliveryError);
  await expect(call()).rejects.toMatchObject({ code: 'UNKNOWN_DELIVERY' });
  return 0;
}

/** An inspect() view at `clock`: empty except for the given parts. */
export function view(clock: number, parts: Partial<InspectView> = {}): InspectView {
  return { queueTime: clock, ready: [], delayed: [], active: [], dead: [], ...parts };
}

/** All of a queue that an operation could change, read without taking time (but stats). */
export interface QueueSnapshot {
  view: InspectView;
  deadLetters: DeadLetter[];
  stats: QueueStats;
}

/** Reads the queue; `stats` at the current clock, which takes no time and changes nothing. */
export async function snapshot(queue: QueueHandle): Promise<QueueSnapshot> {
  const view = await queue.inspect();
  return {
    view,
    deadLetters: await queue.deadLetters(),
    stats: await queue.stats(view.queueTime),
  };
}

/** Expects the call to fail with `errorClass`/`code`, and the queue to be exactly as before. */
export async function expectRefusedUnchanged<T extends LeaseqError>(
  queue: QueueHandle,
  call: () => Promise<unknown>,
  errorClass: ErrorClass<T>,
  code: LeaseqErrorCode,
): Promise<T> {
  const before = await snapshot(queue);
  const error = await expectRejection(call, errorClass, code);
  expect(await snapshot(queue)).toEqual(before);
  return error;
}
