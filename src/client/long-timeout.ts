import { MAX_TIMER_MS } from '../broker/clock.js';

/** A timer armed by `setLongTimeout`. */
export interface LongTimeout {
  /** Cancels it; nothing fires afterwards. */
  clear(): void;
  /** Lets the process exit while only this timer is armed. */
  unref(): LongTimeout;
}

/**
 * Calls `fire` once `ms` have passed, however many (Infinity: never). A Node timer of more
 * than MAX_TIMER_MS (about 24.8 days) fires at once, with a warning: a longer wait is armed
 * MAX_TIMER_MS at a time, each part re-armed for what is left.
 */
export function setLongTimeout(fire: () => void, ms: number): LongTimeout {
  return new PartedTimer(fire, Math.max(0, ms));
}

/**
 * Fields, not closures: the stream client arms one for every frame it sends, and a timer of a
 * few closures cost three to five times a plain one.
 */
class PartedTimer implements LongTimeout {
  private timer: NodeJS.Timeout;
  private referenced = true;

  constructor(
    private readonly fire: () => void,
    private left: number,
  ) {
    this.timer = this.arm();
  }

  clear(): void {
    clearTimeout(this.timer);
  }

  unref(): LongTimeout {
    this.referenced = false;
    this.timer.unref();
    return this;
  }

  private arm(): NodeJS.Timeout {
    const part = Math.min(this.left, MAX_TIMER_MS);
    this.left -= part;
    const timer =
      this.left > 0
        ? setTimeout(() => (this.timer = this.arm()), part)
        : setTimeout(this.fire, part);
    if (!this.referenced) timer.unref();
    return timer;
  }
}
