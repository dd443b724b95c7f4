import { onAbort } from './on-abort.js';

/** Parks receivers of a queue until something may have made a job ready there. */
export class WakeSignal {
  private readonly parked = new Map<string, Set<() => void>>();

  /** `watch(queue)` is told while a receiver of `queue` is parked (see Engine.watchWakes). */
  constructor(private readonly watch?: (queue: string) => () => void) {}

  /** Resolves at the next wake of `queue`, or when the returned promise is abandoned. */
  next(queue: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      let set = this.parked.get(queue);
      if (set === undefined) {
        set = new Set();
        this.parked.set(queue, set);
      }
      const waiters = set;
      const unwatchQueue = this.watch?.(queue);
      const done = () => {
        unwatchQueue?.();
        waiters.delete(done);
        if (waiters.size === 0 && this.parked.get(queue) === waiters) this.parked.delete(queue);
        unwatchSignal();
        resolve();
      };
      waiters.add(done);
      const unwatchSignal = onAbort(signal, done);
    });
  }

  wake(queue: string): void {
    const waiters = this.parked.get(queue);
    if (waiters === undefined) return;
    for (const done of [...waiters]) done();
  }

  /** Wakes everyone (shutdown). */
  wakeAll(): void {
    for (const queue of [...this.parked.keys()]) this.wake(queue);
  }
}
