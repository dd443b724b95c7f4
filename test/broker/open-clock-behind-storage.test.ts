import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  EngineBroker,
  ManualClock,
  SystemClock,
  type TimeSources,
} from '../../src/broker/index.js';
import { openEngine } from '../../src/engine/index.js';
import { open } from '../../src/index.js';
import { temporaryDirectory } from '../temporary-directory.js';

// R2: the broker's time never goes back, across restarts too. A server whose wall clock was
// stepped back went on at its pace (SystemClock), so its queues' clocks stayed ahead of the wall
// clock; restarted with the wall clock still behind, a broker opened by open() took the wall
// clock's time: every call ran at the queue's stored time, which stood still until the wall
// clock caught up (no delay, lease or timeout ran out for the size of the step), and with
// clockMode 'strict' every call was a ClockError.

const directory = temporaryDirectory('leaseq-clock-behind-');
const HOUR = 3_600_000;

/** Leaves queue `jobs` of the SQLite file `file` with its clock an hour ahead of the wall clock. */
async function ranAhead(file: string): Promise<number> {
  const ahead = Date.now() + HOUR;
  const broker = new EngineBroker(await openEngine(`sqlite:${join(directory, file)}`), {
    clock: new ManualClock(ahead),
  });
  try {
    const queue = await broker.queue('jobs');
    await queue.publish({ id: 'before-restart' });
    await queue.receive();
  } finally {
    await broker.close();
  }
  return ahead;
}

describe('open() over a SQLite file whose queue clocks are ahead of the wall clock', () => {
  it('R2 starts its clock at the latest queue time: a delay runs out after its length', async () => {
    const ahead = await ranAhead('delay.db');
    const broker = await open(`sqlite:${join(directory, 'delay.db')}`);
    try {
      expect((broker as EngineBroker).clock.now()).toBeGreaterThanOrEqual(ahead);
      const queue = broker.handle('jobs');
      await queue.publish({ id: 'soon', delay: 50 });
      // Due in 50 ms of the queue's time; the queue stood still for the hour before.
      const received = await queue.receive({ wait: 20_000 });
      expect(received.map(({ id }) => id)).toEqual(['soon']);
    } finally {
      await broker.close();
    }
  });

  it('R2 with clockMode strict, its calls are not refused as behind the queue time', async () => {
    await ranAhead('strict.db');
    const broker = await open(`sqlite:${join(directory, 'strict.db')}`, { clockMode: 'strict' });
    try {
      await expect(broker.handle('jobs').publish({ id: 'after-restart' })).resolves.toEqual({
        id: 'after-restart',
        duplicate: false,
      });
    } finally {
      await broker.close();
    }
  });

  it('R2 a queue driven years ahead through the engine does not move the other queues there', async () => {
    const file = join(directory, 'far-ahead.db');
    const before = await open(`sqlite:${file}`);
    try {
      const orders = await before.queue('orders', { retention: 7 * 24 * HOUR });
      await orders.publish({ id: 'kept' });
      await orders.publish({ id: 'tomorrow', delay: 24 * HOUR });
    } finally {
      await before.close();
    }
    // A tool drove another queue of the file at its own time, in the year 2286.
    const far = new EngineBroker(await openEngine(`sqlite:${file}`), {
      clock: new ManualClock(10_000_000_000_000),
    });
    try {
      await (await far.queue('scratch')).publish({ id: 'far' });
    } finally {
      await far.close();
    }
    const broker = await open(`sqlite:${file}`);
    try {
      expect((broker as EngineBroker).clock.now()).toBeLessThan(Date.now() + HOUR);
      const stats = await broker.handle('orders').stats();
      expect({ ready: stats.ready, delayed: stats.delayed, expired: stats.expired }).toEqual({
        ready: 1,
        delayed: 1,
        expired: 0,
      });
    } finally {
      await broker.close();
    }
  });

  it('R2 a queue at the latest time there is does not keep the broker from the latest of the others', async () => {
    const ahead = await ranAhead('latest-time.db');
    const latest = new EngineBroker(
      await openEngine(`sqlite:${join(directory, 'latest-time.db')}`),
      { clock: new ManualClock(Number.MAX_SAFE_INTEGER) },
    );
    try {
      await (await latest.queue('edge')).publish({ id: 'edge' });
    } finally {
      await latest.close();
    }
    const broker = await open(`sqlite:${join(directory, 'latest-time.db')}`);
    try {
      const now = (broker as EngineBroker).clock.now();
      expect(now).toBeGreaterThanOrEqual(ahead);
      expect(now).toBeLessThan(ahead + HOUR);
    } finally {
      await broker.close();
    }
  });

  it('R2 over a file without queues, its clock is the wall clock', async () => {
    const before = Date.now();
    const broker = await open(`sqlite:${join(directory, 'empty.db')}`);
    try {
      const now = (broker as EngineBroker).clock.now();
      expect(now).toBeGreaterThanOrEqual(before);
      expect(now).toBeLessThan(before + HOUR);
    } finally {
      await broker.close();
    }
  });
});

describe('SystemClock.raiseTo', () => {
  const T0 = 1_800_000_000_000;
  function sources() {
    const time = { wall: T0, monotonic: 1_000 };
    const read: TimeSources = { wall: () => time.wall, monotonic: () => time.monotonic };
    return { read, time };
  }

  it('goes on from the raised time at the monotonic pace, then follows a wall clock past it', () => {
    const { read, time } = sources();
    const clock = new SystemClock(0, read);
    clock.raiseTo(T0 + 60_000);
    expect(clock.now()).toBe(T0 + 60_000);
    time.wall += 1_000;
    time.monotonic += 1_000;
    expect(clock.now()).toBe(T0 + 61_000);
    time.wall += 120_000;
    expect(clock.now()).toBe(T0 + 121_000);
  });

  it('never moves the clock back, and takes no time that is not a number', () => {
    const { read, time } = sources();
    const clock = new SystemClock(0, read);
    time.monotonic += 5_000;
    time.wall += 5_000;
    expect(clock.now()).toBe(T0 + 5_000);
    clock.raiseTo(T0 + 1_000);
    clock.raiseTo(Number.NaN);
    expect(clock.now()).toBe(T0 + 5_000);
  });
});
