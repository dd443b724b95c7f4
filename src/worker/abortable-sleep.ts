import type { Clock } from '../broker/clock.js';
import { onAbort } from '../broker/on-abort.js';

/**
 * `clock.sleep(ms)` that ends early when `signal` aborts, leaving no listener behind on
 * `signal` afterwards: long-lived signals (a worker's stop signal) are slept on many times.
 */
export async function abortableSleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return;
  const own = new AbortController();
  const unwatch = onAbort(signal, () => own.abort());
  try {
    await clock.sleep(ms, own.signal);
  } finally {
    unwatch();
    own.abort();
  }
}
