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
  let left = Math.max(0, ms);
  let referenced = true;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    const part = Math.min(left, MAX_TIMER_MS);
    left -= part;
    timer = setTimeout(left > 0 ? arm : fire, part);
    if (!referenced) timer.unref();
  };
  arm();
  const handle: LongTimeout = {
    clear: () => clearTimeout(timer),
    unref: () => {
      referenced = false;
      timer?.unref();
      return handle;
    },
  };
  return handle;
}
