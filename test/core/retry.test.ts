import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffDelay, LeaseQueue } from '../../src/core/index.js';

const base = { baseDelay: 100, maxDelay: 1000 };

describe('retry policy (R15)', () => {
  it('R15 without jitter the delay is base·factor^(attempt−1), capped at maxDelay', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7].map((attempt) =>
      backoffDelay({ id: 'j', attempt, ...base, jitter: 0 }),
    );
    expect(delays).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
    const tripled = [1, 2, 3, 4].map((attempt) =>
      backoffDelay({ id: 'j', attempt, baseDelay: 10, maxDelay: 200, factor: 3, jitter: 0 }),
    );
    expect(tripled).toEqual([10, 30, 90, 200]);
  });

  it('R15 the default factor is 2', () => {
    expect(backoffDelay({ id: 'j', attempt: 4, baseDelay: 5, maxDelay: 10_000, jitter: 0 })).toBe(
      40,
    );
  });

  it('R15 the same id and attempt always give the same delay', () => {
    for (const id of ['a', 'b', 'job-42', 'ü']) {
      for (let attempt = 1; attempt <= 8; attempt++) {
        const input = { id, attempt, ...base };
        expect(backoffDelay(input)).toBe(backoffDelay({ ...input }));
      }
    }
  });

  it('R15 jitter spreads different ids (not all equal) and stays within the jittered band', () => {
    const ids = Array.from({ length: 100 }, (_, i) => `job-${i}`);
    const delays = ids.map((id) => backoffDelay({ id, attempt: 3, ...base, jitter: 0.5 }));
    expect(new Set(delays).size).toBeGreaterThan(20);
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(200);
      expect(d).toBeLessThanOrEqual(400);
    }
  });

  it('R15 jitter also differs between attempts of one id at the cap', () => {
    const delays = Array.from({ length: 30 }, (_, i) =>
      backoffDelay({ id: 'same', attempt: 10 + i, ...base, jitter: 1 }),
    );
    expect(new Set(delays).size).toBeGreaterThan(5);
  });

  it('R15 property: an integer in [ (1−jitter)·e, e ], e = min(max, base·factor^(a−1)); monotone without jitter', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 20 }),
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 1, max: 4 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (id, attempt, baseDelay, extra, factor, jitter) => {
          const maxDelay = baseDelay + extra;
          const input = { id, attempt, baseDelay, maxDelay, factor, jitter };
          const d = backoffDelay(input);
          const e = Math.min(maxDelay, baseDelay * factor ** (attempt - 1));
          expect(Number.isInteger(d)).toBe(true);
          expect(d).toBeGreaterThanOrEqual(0);
          expect(d).toBeLessThanOrEqual(maxDelay);
          expect(d).toBeGreaterThanOrEqual(Math.floor(e * (1 - jitter)) - 1);
          expect(d).toBeLessThanOrEqual(e);
          expect(backoffDelay({ ...input })).toBe(d);
          const next = backoffDelay({ ...input, attempt: attempt + 1, jitter: 0 });
          expect(next).toBeGreaterThanOrEqual(backoffDelay({ ...input, jitter: 0 }));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('R15 a zero base delay stays 0 however many attempts (0 · factor^1024 is not NaN)', () => {
    for (const attempt of [1024, 1025, 1026, 10_000, 1_000_000]) {
      expect(backoffDelay({ id: 'j', attempt, baseDelay: 0, maxDelay: 0 })).toBe(0);
      expect(backoffDelay({ id: 'j', attempt, baseDelay: 0, maxDelay: 5000 })).toBe(0);
    }
  });

  it('R15 rounding of a huge delay with a tiny jitter does not go past maxDelay', () => {
    // This id's jitter fraction is 0.99999999837…: the sum rounds up to maxDelay + 1 unclamped.
    const maxDelay = 7_018_503_566_881_525;
    const input = { id: 'j24546694', attempt: 1, baseDelay: maxDelay, maxDelay, jitter: 1e-12 };
    expect(backoffDelay(input)).toBe(maxDelay);
  });

  it('R15 property: a finite integer in [0, maxDelay] for every attempt up to 1e6, whatever the delays', () => {
    const delay = fc.oneof(
      fc.integer({ min: 0, max: 10 }),
      fc.integer({ min: 0, max: 1_000_000 }),
      fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
    );
    fc.assert(
      fc.property(
        fc.string({ maxLength: 20 }),
        fc.oneof(fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 1020, max: 1100 })),
        delay,
        delay,
        fc.oneof(fc.constant(2), fc.double({ min: 1, max: 1000, noNaN: true })),
        fc.oneof(fc.constantFrom(0, 0.5, 1), fc.double({ min: 0, max: 1, noNaN: true })),
        (id, attempt, a, b, factor, jitter) => {
          const baseDelay = Math.min(a, b);
          const maxDelay = Math.max(a, b);
          const d = backoffDelay({ id, attempt, baseDelay, maxDelay, factor, jitter });
          expect(Number.isSafeInteger(d)).toBe(true);
          expect(d).toBeGreaterThanOrEqual(0);
          expect(d).toBeLessThanOrEqual(maxDelay);
          if (baseDelay === 0) expect(d).toBe(0);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('R15 a retry nacks with delay = backoff(attempt): the job waits exactly that long', () => {
    const q = new LeaseQueue({ visibility: 10_000 });
    q.publish(0, { id: 'flaky' });
    const [d] = q.reserve(0);
    const delay = backoffDelay({ id: 'flaky', attempt: d?.deliveryCount ?? 0, ...base });
    expect(q.nack(3, d?.token ?? -1, { delay })).toBe(true);
    expect(q.inspect().delayed).toEqual([{ id: 'flaky', availableAt: 3 + delay }]);
    expect(q.reserve(2 + delay)).toEqual([]);
    expect(q.reserve(3 + delay)[0]).toMatchObject({ id: 'flaky', deliveryCount: 2 });
  });
});
