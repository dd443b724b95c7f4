import { backoffDelay } from '../core/index.js';

/**
 * Fetch-loop retry delays after failed receives, ms: the step doubles from base to max. The max
 * bounds how long a worker stays idle once its storage or server is back: at most 5 s after it.
 */
export const FETCH_RETRY = { baseDelay: 100, maxDelay: 5_000 };

/**
 * Where the fetch loop's jitter comes from: `Math.random`, read at each retry. Tests put a
 * fixed source here to know the delays; nothing else should.
 */
export const fetchRetryJitter: { random: () => number } = { random: Math.random };

/**
 * The wait before the next receive after `failures` failed in a row. "Equal jitter" (AWS,
 * Exponential Backoff And Jitter): half the step fixed, half drawn at random in each process,
 * so workers that lost their storage together spread their retries rather than retry in
 * lockstep, while none retries at once against a storage that refuses at once (full jitter
 * may draw 0). A job's retry delay stays deterministic (R15); this one need not replay.
 */
export function fetchRetryDelay(failures: number): number {
  const step = backoffDelay({ id: 'fetch', attempt: failures, ...FETCH_RETRY, jitter: 0 });
  const drawn = Math.floor(step / 2 + (step / 2) * fetchRetryJitter.random());
  // A source of its own may answer 1 (or more): the step stays the bound.
  return Math.min(step, Math.max(0, drawn));
}
