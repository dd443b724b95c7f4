import { onAbort } from './on-abort.js';

/**
 * Where the Broker's `now` comes from: milliseconds that never go back. The only code in leaseq
 * that reads the wall clock or sets timers lives behind this interface.
 */
export interface Clock {
  /** The current time in ms; never smaller than any earlier answer. */
  now(): number;
  /** Resolves after `ms` of this clock's time, or at once when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * The longest delay a Node timer takes (about 24.8 days): a longer one fires at once, with a
 * warning. Longer sleeps end here, and their callers, which check the time, sleep again.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Wall-clock milliseconds made monotonic: a clock stepped back makes time stand still. */
export class SystemClock implements Clock {
  private floor = 0;

  constructor(private offsetMs = 0) {}

  /**
   * Follows another clock (a shared database's): `read` returns its time in ms. The offset is
   * taken at the middle of the round trip.
   */
  async syncTo(read: () => Promise<number>): Promise<void> {
    const before = Date.now();
    const remote = await read();
    const after = Date.now();
    this.offsetMs = remote - Math.round((before + after) / 2);
  }

  now(): number {
    const wall = Date.now() + this.offsetMs;
    if (wall > this.floor) this.floor = wall;
    return this.floor;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        unwatch?.();
        resolve();
      };
      const timer = setTimeout(done, Math.min(Math.max(0, ms), MAX_TIMER_MS));
      const unwatch = signal === undefined ? undefined : onAbort(signal, done);
    });
  }
}

/** A clock that moves only when told to: deterministic tests of anything above the core. */
export class ManualClock implements Clock {
  private time: number;
  private sleepers: { until: number; resolve: () => void }[] = [];

  constructor(start = 0) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  /** Moves time forward by `ms` and wakes every sleeper whose time came. */
  advance(ms: number): void {
    this.set(this.time + ms);
  }

  /** Moves time to `time` (never back) and wakes every sleeper whose time came. */
  set(time: number): void {
    if (time < this.time)
      throw new RangeError(`ManualClock cannot go back from ${this.time} to ${time}`);
    this.time = time;
    const due = this.sleepers.filter((sleeper) => sleeper.until <= time);
    this.sleepers = this.sleepers.filter((sleeper) => sleeper.until > time);
    for (const sleeper of due) sleeper.resolve();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted || ms <= 0) return resolve();
      const aborted = () => {
        this.sleepers = this.sleepers.filter((other) => other !== sleeper);
        resolve();
      };
      const sleeper = {
        until: this.time + ms,
        resolve: () => {
          unwatch?.();
          resolve();
        },
      };
      this.sleepers.push(sleeper);
      const unwatch = signal === undefined ? undefined : onAbort(signal, aborted);
    });
  }

  /** How many sleepers wait; lets a test wait until a loop is parked. */
  get waiting(): number {
    return this.sleepers.length;
  }
}
