import { expect } from 'vitest';
import type { LeaseqError } from '../../src/core/errors.js';
import { LeaseQueue } from '../../src/core/index.js';
import type { InspectView } from '../../src/core/types.js';

/** Runs `fn`, expects it to throw, and returns what it threw. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw, but it returned');
}

/** Expects `fn` to throw an instance of `cls` with `code`, and returns the error. */
export function expectError<T extends LeaseqError>(
  fn: () => unknown,
  cls: abstract new (...args: never[]) => T,
  code: string,
): T {
  const error = thrown(fn);
  expect(error).toBeInstanceOf(cls);
  expect((error as T).code).toBe(code);
  return error as T;
}

/** An empty view at `clock`, with the given parts. */
export function view(clock: number, parts: Partial<InspectView> = {}): InspectView {
  return { queueTime: clock, ready: [], delayed: [], active: [], dead: [], ...parts };
}

/** A queue at clock 5 holding one job in every state and one open session. */
export function busyQueue(): { q: LeaseQueue; s: string } {
  const q = new LeaseQueue({ visibility: 10, maxDeliveries: 3 });
  q.publishBatch(0, [
    { id: 'a', payload: 1 },
    { id: 'b', payload: 2 },
    { id: 'c', payload: 3 },
    { id: 'd', payload: 4, delay: 50 },
    { id: 'e', payload: 5 },
  ]);
  const s = q.openSession(0, { timeout: 20 });
  q.reserve(0, { session: s, visibility: 6 }); // 1 a, deadline 6
  q.reserve(1); // 2 b, deadline 11
  q.reserve(2); // 3 c, deadline 12
  q.nack(3, 3, { requeue: false });
  q.stats(5);
  expect(q.inspect()).toEqual(
    view(5, {
      ready: ['e'],
      delayed: [{ id: 'd', availableAt: 50 }],
      active: [
        { token: 1, id: 'a', deadline: 6, deliveryCount: 1, session: s },
        { token: 2, id: 'b', deadline: 11, deliveryCount: 1 },
      ],
      dead: [{ id: 'c', reason: 'rejected', deliveryCount: 1 }],
    }),
  );
  return { q, s };
}

/** Job ids `j<from>` … `j<to - 1>`. */
export const ids = (from: number, to: number): string[] =>
  Array.from({ length: to - from }, (_, i) => `j${from + i}`);

/** A job of the ready list that counts how often its time is read: the list's work on it. */
export class Counted {
  static reads = 0;
  #at: number;
  constructor(at: number) {
    this.#at = at;
  }
  get availableAt(): number {
    Counted.reads += 1;
    return this.#at;
  }
  set availableAt(at: number) {
    this.#at = at;
  }
}
