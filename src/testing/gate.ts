import { ValidationError } from '../core/index.js';
import { show } from '../core/validate.js';

/**
 * Holds handlers until the test opens it, and tells the test when they have arrived: a slow
 * or stuck handler without any real waiting.
 */
export class Gate {
  private isOpen = false;
  private arrivals = 0;
  private readonly passers: (() => void)[] = [];
  private watchers: { count: number; resolve: () => void }[] = [];

  /** How many callers have arrived at the gate so far. */
  get arrived(): number {
    return this.arrivals;
  }

  /**
   * Waits until the gate is open. With `signal`, rejects with the signal's reason if it fires
   * first (a handler that honours ctx.signal).
   */
  pass(signal?: AbortSignal): Promise<void> {
    this.arrivals += 1;
    const due = this.watchers.filter((watcher) => watcher.count <= this.arrivals);
    this.watchers = this.watchers.filter((watcher) => watcher.count > this.arrivals);
    for (const watcher of due) watcher.resolve();
    if (this.isOpen) return Promise.resolve();
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => reject(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.passers.push(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }

  /**
   * Resolves once `count` callers in all have arrived. A `count` that is not an integer ≥ 0
   * (NaN, 1.5, "2") is refused with a ValidationError: it would never be reached, or not when
   * meant, and the test would wait for ever.
   */
  arrivedAt(count = 1): Promise<void> {
    if (!(typeof count === 'number' && Number.isSafeInteger(count) && count >= 0)) {
      return Promise.reject(
        new ValidationError(`arrivedAt: count must be an integer ≥ 0, got ${show(count)}`),
      );
    }
    if (this.arrivals >= count) return Promise.resolve();
    return new Promise((resolve) => this.watchers.push({ count, resolve }));
  }

  /** Lets everyone waiting, and everyone after, through. */
  open(): void {
    this.isOpen = true;
    for (const pass of this.passers.splice(0)) pass();
  }
}
