import { describe, expect, it, vi } from 'vitest';
import { RESYNC_MS, SystemClock, type TimeSources } from '../../src/broker/index.js';
import { resolveWorkerOptions } from '../../src/worker/options.js';

/** A wall clock a test steps, and a monotonic one it moves; both start at the given times. */
function sources(wall: number, monotonic = 1_000) {
  const time = { wall, monotonic };
  const read: TimeSources = { wall: () => time.wall, monotonic: () => time.monotonic };
  return {
    read,
    /** Real time passes: both clocks move. */
    pass(ms: number) {
      time.wall += ms;
      time.monotonic += ms;
    },
    /** The wall clock alone is set (NTP stepping it, an operator). */
    step(ms: number) {
      time.wall += ms;
    },
  };
}

const T0 = 1_800_000_000_000;

describe('SystemClock: never back, and at the pace of a clock that does not step', () => {
  it('on its own, it is the wall clock; a step back is not followed: time goes on at its pace', () => {
    const time = sources(T0);
    const clock = new SystemClock(0, time.read);
    expect(clock.now()).toBe(T0);
    time.pass(1_000);
    expect(clock.now()).toBe(T0 + 1_000);
    time.step(-20_000);
    // Not standing still for 20 s: a lease measured by it would stop being renewed.
    time.pass(2_000);
    expect(clock.now()).toBe(T0 + 3_000);
    time.pass(2_000);
    expect(clock.now()).toBe(T0 + 5_000);
  });

  it('on its own, a step forward (or a machine waking from sleep) is followed', () => {
    const time = sources(T0);
    const clock = new SystemClock(0, time.read);
    expect(clock.now()).toBe(T0);
    time.step(60_000);
    expect(clock.now()).toBe(T0 + 60_000);
    time.pass(500);
    expect(clock.now()).toBe(T0 + 60_500);
  });

  it('carried on (a worker, measuring durations), it follows no step either way', () => {
    const time = sources(T0);
    const clock = SystemClock.carriedOn(time.read);
    time.pass(1_000);
    time.step(-20_000);
    expect(clock.now()).toBe(T0 + 1_000);
    time.step(80_000);
    time.pass(1_000);
    expect(clock.now()).toBe(T0 + 2_000);
  });

  it("synced to a storage's clock, it keeps that time whatever the wall clock does, and measures it again", async () => {
    const time = sources(T0);
    const storage = { time: T0 + 30_000, fail: false };
    const read = vi.fn(async () => {
      if (storage.fail) throw new Error('storage down');
      return storage.time;
    });
    const clock = new SystemClock(0, time.read);
    await clock.syncTo(read);
    expect(clock.now()).toBe(T0 + 30_000);
    time.step(-25_000);
    time.pass(1_000);
    storage.time += 1_000;
    expect(clock.now()).toBe(T0 + 31_000);
    time.step(120_000);
    expect(clock.now()).toBe(T0 + 31_000);
    expect(read).toHaveBeenCalledTimes(1);
    // A process that slept: the monotonic clock stood still, the storage's did not.
    storage.time += 3_600_000;
    time.pass(RESYNC_MS);
    expect(clock.now()).toBe(T0 + 31_000 + RESYNC_MS);
    expect(read).toHaveBeenCalledTimes(2);
    await vi.waitFor(() => expect(clock.now()).toBe(T0 + 31_000 + 3_600_000));
    // Found ahead of the storage: it goes on at its pace, never back.
    storage.time -= 10_000;
    time.pass(RESYNC_MS);
    const before = clock.now();
    await new Promise((resolve) => setImmediate(resolve));
    time.pass(1);
    expect(clock.now()).toBe(before + 1);
    // The storage unreachable: carried on, measured again after another RESYNC_MS.
    storage.fail = true;
    time.pass(RESYNC_MS);
    const carried = clock.now();
    await new Promise((resolve) => setImmediate(resolve));
    expect(clock.now()).toBe(carried);
    const calls = read.mock.calls.length;
    time.pass(RESYNC_MS / 2);
    clock.now();
    expect(read).toHaveBeenCalledTimes(calls);
  });

  it("a slow measure (a wait for a pooled connection) never puts it ahead of the storage's clock", async () => {
    const time = sources(T0);
    const storage = { offset: 30_000 };
    // The round trip waits 4 s before the query reads the storage's clock, at its end.
    const read = async () => {
      time.pass(4_000);
      return time.read.wall() + storage.offset;
    };
    const clock = new SystemClock(0, time.read);
    await clock.syncTo(read);
    const lead = () => clock.now() - (time.read.wall() + storage.offset);
    expect(lead()).toBeLessThanOrEqual(0);
    time.pass(RESYNC_MS);
    clock.now();
    await new Promise((resolve) => setImmediate(resolve));
    expect(lead()).toBeLessThanOrEqual(0);
  });

  it("a worker's own clock follows no step of the wall clock", () => {
    const wall = vi.spyOn(Date, 'now');
    try {
      wall.mockReturnValue(T0);
      const { clock } = resolveWorkerOptions({});
      const start = clock.now();
      wall.mockReturnValue(T0 - 20_000);
      expect(clock.now()).toBeGreaterThanOrEqual(start);
      wall.mockReturnValue(T0 + 60_000);
      expect(clock.now() - start).toBeLessThan(1_000);
    } finally {
      wall.mockRestore();
    }
  });
});
