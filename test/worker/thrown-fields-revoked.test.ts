import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/core/index.js';
import { decide, PermanentError, RetryableError } from '../../src/worker/index.js';

// A field of what the handler threw that reads without a throw, but whose value is a revoked
// Proxy: every question asked of it (is it an array?) throws. Deciding must still not throw,
// or the job is left leased and, from an async handler, the process ends on the rejection.

/** A value every inspection of which throws. */
function revoked(): unknown {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

/** `error` with its own `name` field set to `value`. */
function withField<E extends Error>(error: E, name: 'reason' | 'delay', value: unknown): E {
  Object.defineProperty(error, name, { value });
  return error;
}

const backoff = { baseDelay: 1000, maxDelay: 60_000, factor: 2, jitter: 0.5 };
const input = { id: 'job-1', deliveryCount: 1, maxDeliveries: 3, backoff };

describe('decide, given a thrown error whose field is a revoked Proxy', () => {
  it('a PermanentError with such a reason dies at once as permanent, saying why', () => {
    const error = withField(new PermanentError('refused'), 'reason', revoked());
    expect(decide({ status: 'threw', error }, input)).toEqual({
      action: 'dead-letter',
      kind: 'dead',
      reason: 'permanent',
      error:
        'refused (its reason was refused: reason must be a string of 1 to 1024 characters, got object; dead-lettered as permanent)',
    });
  });

  it('a RetryableError with such a delay is retried after the backoff, saying why', () => {
    const fallback = backoffDelay({ id: 'job-1', attempt: 1, ...backoff });
    const error = withField(new RetryableError('slow down'), 'delay', revoked());
    expect(decide({ status: 'threw', error }, input)).toEqual({
      action: 'retry',
      kind: 'retried',
      delay: fallback,
      reason: 'retryable',
      error: `slow down (its delay of object is not an integer ≥ 0 ms: retried after the backoff's ${fallback} ms)`,
    });
  });
});
