import { ValidationError } from '../core/index.js';
import { show } from '../core/validate.js';
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

/** Where SystemClock reads time: the wall clock and a monotonic one (for tests to replace). */
export interface TimeSources {
  /** Wall-clock ms since the epoch (`Date.now`); may step either way. */
  wall(): number;
  /** Ms on a clock that never steps (`performance.now`); its origin does not matter. */
  monotonic(): number;
}

const SYSTEM_TIME: TimeSources = {
  wall: () => Date.now(),
  monotonic: () => performance.now(),
};

/** How often a clock that follows a storage's measures it again (ms). */
export const RESYNC_MS = 10_000;

/**
 * The broker's time in ms: it never goes back, and it always runs at the pace of a clock that
 * does not step, so that a lease, a renewal or a wait lasts what it says whatever the wall
 * clock does. Unsynced (one machine's storage), it is the wall clock, except that a step back
 * is not followed (time goes on from where it was) while a step forward, or a machine waking
 * from sleep, is. Synced to a shared storage's clock (`syncTo`), the wall clock no longer
 * matters: time is the storage's, as measured then, carried on by the monotonic clock and
 * measured again every RESYNC_MS (a process that slept catches up; one found ahead goes on at
 * its pace rather than back).
 */
export class SystemClock implements Clock {
  /** The last answer, unrounded, and the monotonic reading it was given at. */
  private last = Number.NEGATIVE_INFINITY;
  private lastMonotonic = 0;
  /** Once synced: the storage's time at a monotonic reading, and how to read it again. */
  private anchor: { time: number; monotonic: number } | undefined;
  private read: (() => Promise<number>) | undefined;
  private resyncing = false;

  constructor(
    private readonly offsetMs = 0,
    private readonly sources: TimeSources = SYSTEM_TIME,
  ) {}

  /**
   * The wall clock's time now, carried on by the monotonic clock alone: no step of the wall
   * clock, either way, moves it. For measuring durations (a worker's leases and renewals), which
   * a step would otherwise lengthen (renewals stop while time stands still) or cut.
   */
  static carriedOn(sources: TimeSources = SYSTEM_TIME): SystemClock {
    const clock = new SystemClock(0, sources);
    clock.anchor = { time: sources.wall(), monotonic: sources.monotonic() };
    return clock;
  }

  /**
   * Follows another clock (a shared database's): `read` returns its time in ms, taken to be at
   * the end of the round trip. Measured again every RESYNC_MS while the clock is read.
   */
  async syncTo(read: () => Promise<number>): Promise<void> {
    this.read = read;
    await this.measure(read);
  }

  private async measure(read: () => Promise<number>): Promise<void> {
    const remote = await read();
    // Taken as read at the end of the round trip (it was read no later): a slow one (a wait for
    // a pooled connection, a new one) leaves this clock behind the storage's by at most its
    // length, never ahead, which a clock that never goes back could not undo.
    this.anchor = { time: remote, monotonic: this.sources.monotonic() };
  }

  /**
   * Never answers less than `time` from now on: from it, time goes on at the monotonic clock's
   * pace (and follows the wall clock, or the storage's, once that passes it). For a time the
   * storage recorded before this clock was made: a process that ran on while the wall clock
   * stepped back left its queues' clocks ahead of it, and a broker opened after it starts there,
   * rather than hand the storage a `now` behind them until the wall clock catches up (time
   * standing still for the size of the step: no lease, delay or timeout running out).
   */
  raiseTo(time: number): void {
    if (!Number.isFinite(time) || time <= this.now()) return;
    this.last = time;
    this.lastMonotonic = this.sources.monotonic();
  }

  now(): number {
    const monotonic = this.sources.monotonic();
    const target =
      this.anchor === undefined
        ? this.sources.wall() + this.offsetMs
        : this.anchor.time + (monotonic - this.anchor.monotonic);
    const paced = this.last + (monotonic - this.lastMonotonic);
    this.last = Math.max(target, paced);
    this.lastMonotonic = monotonic;
    if (this.read !== undefined && monotonic - (this.anchor?.monotonic ?? 0) >= RESYNC_MS) {
      this.resync();
    }
    return Math.floor(this.last);
  }

  /** Measures the storage's clock again, in the background; a failure waits for the next turn. */
  private resync(): void {
    const read = this.read;
    if (read === undefined || this.resyncing) return;
    this.resyncing = true;
    const anchor = this.anchor;
    this.measure(read)
      .catch(() => {
        // Unreachable now: the time carried on, measured again after another RESYNC_MS.
        if (anchor === undefined) return;
        const monotonic = this.sources.monotonic();
        this.anchor = { time: anchor.time + (monotonic - anchor.monotonic), monotonic };
      })
      .finally(() => {
        this.resyncing = false;
      });
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

/**
 * A clock that moves only when told to: deterministic tests of anything above the core. Its
 * times are whole milliseconds ≥ 0, as the broker's: a start, a step or a time that is not
 * (NaN, 1.5, "10", -1), or a time behind the clock, is refused with a ValidationError and the
 * clock stays where it was, rather than hand the broker a time it refuses at every call.
 */
export class ManualClock implements Clock {
  private time: number;
  private sleepers: { until: number; resolve: () => void }[] = [];

  constructor(start = 0) {
    if (!isWholeMs(start)) {
      throw new ValidationError(
        `ManualClock: start must be an integer ≥ 0 (ms), got ${show(start)}`,
      );
    }
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  /** Moves time forward by `ms` and wakes every sleeper whose time came. */
  advance(ms: number): void {
    if (!isWholeMs(ms)) {
      throw new ValidationError(`ManualClock.advance: ms must be an integer ≥ 0, got ${show(ms)}`);
    }
    if (!isWholeMs(this.time + ms)) {
      throw new ValidationError(
        `ManualClock.advance: ms must keep the time a safe integer, got ${ms}`,
      );
    }
    this.set(this.time + ms);
  }

  /** Moves time to `time` (never back) and wakes every sleeper whose time came. */
  set(time: number): void {
    if (!isWholeMs(time)) {
      throw new ValidationError(
        `ManualClock.set: time must be an integer ≥ 0 (ms), got ${show(time)}`,
      );
    }
    if (time < this.time) {
      throw new ValidationError(`ManualClock cannot go back from ${this.time} to ${time}`);
    }
    this.time = time;
    const due = this.sleepers.filter((sleeper) => sleeper.until <= time);
    this.sleepers = this.sleepers.filter((sleeper) => sleeper.until > time);
    for (const sleeper of due) sleeper.resolve();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      // As a timer given NaN: at once (a sleeper due at NaN would never be woken).
      if (signal?.aborted || !(ms > 0)) return resolve();
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

/** A time or a step of ManualClock: a whole number of ms ≥ 0 (the broker refuses others). */
function isWholeMs(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
