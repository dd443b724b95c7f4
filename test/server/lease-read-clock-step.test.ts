import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Queue } from '../../src/broker/index.js';
import { leaseOf } from '../../src/server/limits.js';

// The server checks a receive that names no visibility against the queue's own (maxVisibilityMs),
// read at most once a second per queue. That second was measured on the wall clock: stepped
// back an hour, the server kept the visibility read before the step for an hour, so a queue
// whose visibility the operator changed meanwhile was checked by the old one.

afterEach(() => {
  vi.restoreAllMocks();
});

/** A queue whose options answer the visibility in `current`, counting the reads. */
function queueReading(current: { visibility: number; reads: number }): Queue {
  return {
    options: async () => {
      current.reads += 1;
      return { visibility: current.visibility };
    },
  } as unknown as Queue;
}

describe('the queue visibility a server checks receives against', () => {
  it('is read again a second later, whatever the wall clock did meanwhile', async () => {
    const wall = vi.spyOn(Date, 'now');
    const monotonic = vi.spyOn(performance, 'now');
    const T0 = 1_800_000_000_000;
    wall.mockReturnValue(T0);
    monotonic.mockReturnValue(5_000);
    const current = { visibility: 30_000, reads: 0 };
    const queue = queueReading(current);
    expect(await leaseOf(queue)).toBe(30_000);
    expect(await leaseOf(queue)).toBe(30_000);
    expect(current.reads).toBe(1);

    current.visibility = 60_000;
    // Two seconds pass while the wall clock is stepped back an hour.
    wall.mockReturnValue(T0 - 3_600_000 + 2_000);
    monotonic.mockReturnValue(7_000);
    expect(await leaseOf(queue)).toBe(60_000);
    expect(current.reads).toBe(2);
  });
});
