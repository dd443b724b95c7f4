import type { Clock } from '../broker/clock.js';

/**
 * `clock.sleep(ms)` that ends early when `signal` aborts, leaving no listener behind on
 * `signal` afterwards: long-lived signals (a worker's stop signal) are slept on many times.
 */
export async function abortableSleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return;
  const own = new AbortController();
  const abort = () => own.abort();
  signal.addEventListener('abort', abort, { once: true });
  try {
    await clock.sleep(ms, own.signal);
  } finally {
    signal.removeEventListener('abort', abort);
    own.abort();
  }
}
