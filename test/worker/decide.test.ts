import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/core/index.js';
import {
  AmbiguousError,
  DuplicateError,
  decide,
  PermanentError,
  RetryableError,
} from '../../src/worker/index.js';

const backoff = { baseDelay: 1000, maxDelay: 60_000, factor: 2, jitter: 0.5 };
const at = (deliveryCount: number, maxDeliveries = 3) => ({
  id: 'job-1',
  deliveryCount,
  maxDeliveries,
  backoff,
});
const threw = (error: unknown) => ({ status: 'threw' as const, error });

describe('the outcome table', () => {
  it('returned → ack; returned after ctx.duplicate() → ack as duplicate', () => {
    expect(decide({ status: 'returned', duplicate: false }, at(1))).toEqual({
      action: 'ack',
      kind: 'acked',
    });
    expect(decide({ status: 'returned', duplicate: true }, at(1))).toEqual({
      action: 'ack',
      kind: 'duplicate',
    });
  });

  it('DuplicateError → ack as duplicate, whatever the delivery count', () => {
    expect(decide(threw(new DuplicateError('seen')), at(3))).toEqual({
      action: 'ack',
      kind: 'duplicate',
      reason: 'seen',
    });
  });

  it('PermanentError → dead-letter with its reason; AmbiguousError → dead-letter ambiguous', () => {
    expect(decide(threw(new PermanentError('bad')), at(1))).toEqual({
      action: 'dead-letter',
      kind: 'dead',
      reason: 'permanent',
      error: 'bad',
    });
    expect(decide(threw(new PermanentError('bad', { reason: 'schema' })), at(1))).toMatchObject({
      reason: 'schema',
    });
    expect(decide(threw(new AmbiguousError('timeout')), at(1))).toEqual({
      action: 'dead-letter',
      kind: 'ambiguous',
      reason: 'ambiguous',
      error: 'timeout',
    });
  });

  it('anything else → retry with backoff(id, deliveryCount) until maxDeliveries (R13, R15)', () => {
    expect(decide(threw(new Error('x')), at(2))).toEqual({
      action: 'retry',
      kind: 'retried',
      delay: backoffDelay({ id: 'job-1', attempt: 2, ...backoff }),
      reason: 'retryable',
      error: 'x',
    });
    expect(decide(threw(new Error('x')), at(3))).toEqual({
      action: 'dead-letter',
      kind: 'dead',
      reason: 'retries-exhausted',
      error: 'x',
    });
  });

  it("a RetryableError's own delay wins, unless it is not a valid delay", () => {
    expect(decide(threw(new RetryableError('slow down', { delay: 0 })), at(1))).toMatchObject({
      delay: 0,
    });
    const fallback = backoffDelay({ id: 'job-1', attempt: 1, ...backoff });
    for (const delay of [-1, 1.5, Number.NaN]) {
      expect(decide(threw(new RetryableError('x', { delay })), at(1))).toMatchObject({
        delay: fallback,
        // Said in the record, not dropped in silence.
        error: `x (its delay of ${delay} is not an integer ≥ 0 ms: retried after the backoff's ${fallback} ms)`,
      });
    }
    expect(decide(threw(new RetryableError('x', { delay: 10 })), at(3))).toMatchObject({
      action: 'dead-letter',
      reason: 'retries-exhausted',
    });
  });

  it("a delay above the queue's longest (maxDelay) is cut to it, and the record says so", () => {
    const bounded = { ...at(1), maxDelay: 5000 };
    expect(decide(threw(new RetryableError('quota', { delay: 86_400_000 })), bounded)).toEqual({
      action: 'retry',
      kind: 'retried',
      delay: 5000,
      reason: 'retryable',
      error:
        'quota (its delay of 86400000 ms is above the longest the queue takes: retried after 5000 ms)',
    });
    // At the bound, or below it, nothing changes.
    expect(decide(threw(new RetryableError('quota', { delay: 5000 })), bounded)).toEqual({
      action: 'retry',
      kind: 'retried',
      delay: 5000,
      reason: 'retryable',
      error: 'quota',
    });
    expect(decide(threw(new Error('x')), { ...at(1), maxDelay: 0 })).toMatchObject({ delay: 0 });
    expect(decide(threw(new RetryableError('x', { delay: 86_400_000 })), at(1))).toMatchObject({
      delay: 86_400_000,
    });
  });

  it('with maxDeliveries Infinity and a zero backoff, a retry waits 0 ms at any delivery', () => {
    const zero = { baseDelay: 0, maxDelay: 0, factor: 2, jitter: 0.5 };
    for (const deliveryCount of [1, 1024, 1025, 1_000_000]) {
      expect(
        decide(threw(new Error('e')), {
          id: 'job-1',
          deliveryCount,
          maxDeliveries: Number.POSITIVE_INFINITY,
          backoff: zero,
        }),
      ).toMatchObject({ action: 'retry', delay: 0 });
    }
  });

  it('property: a retry is decided exactly below maxDeliveries, with a delay in the jitter band', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 20 }),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 40 }),
        (id, deliveryCount, maxDeliveries) => {
          const decision = decide(threw(new Error('e')), {
            ...at(deliveryCount, maxDeliveries),
            id,
          });
          if (deliveryCount >= maxDeliveries) {
            expect(decision).toMatchObject({ action: 'dead-letter', reason: 'retries-exhausted' });
            return;
          }
          const full = Math.min(backoff.maxDelay, backoff.baseDelay * 2 ** (deliveryCount - 1));
          expect(decision.action).toBe('retry');
          const { delay } = decision as { delay: number };
          expect(delay).toBeGreaterThanOrEqual(Math.floor(full / 2));
          expect(delay).toBeLessThanOrEqual(full);
          expect(
            decide(threw(new Error('other')), { ...at(deliveryCount, maxDeliveries), id }),
          ).toMatchObject({ delay });
        },
      ),
    );
  });
});
