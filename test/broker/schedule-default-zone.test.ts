import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { MemoryEngine } from '../../src/engine/memory/memory-engine.js';

// R25: a cron expression without a time zone is read in UTC, whatever the process's own zone.
// Left to the cron parser, it was read in the process's zone: set with `timezone: 'UTC'` or
// without, the same definition fired at other times on a machine not on UTC.

const T0 = Date.UTC(2026, 10, 30, 0, 30);

describe('R25 a cron without a time zone, in a process whose zone is not UTC', () => {
  let zone: string | undefined;
  beforeEach(() => {
    zone = process.env.TZ;
    // India: 5 h 30 ahead of UTC all year, so no cron of whole hours can read the same there.
    process.env.TZ = 'Asia/Kolkata';
  });
  afterEach(() => {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
  });

  it('R25 is read in UTC, as one with timezone UTC is', async () => {
    // The process's zone did change: without it this test would show nothing.
    expect(new Date(T0).getTimezoneOffset()).toBe(-330);
    const clock = new ManualClock(T0);
    const broker = new EngineBroker(new MemoryEngine(), { clock });
    try {
      const queue = await broker.queue('zoned');
      const at = Date.UTC(2026, 10, 30, 9, 7);
      expect(await queue.schedule('default', '7 9 * * *')).toMatchObject({ nextAt: at });
      expect(await queue.schedule('named', '7 9 * * *', { timezone: 'UTC' })).toMatchObject({
        nextAt: at,
      });
      clock.set(at);
      const published = await broker.scheduler().runOnce();
      expect(published.map((occurrence) => occurrence.id)).toEqual([
        'default@2026-11-30T09:07:00.000Z',
        'named@2026-11-30T09:07:00.000Z',
      ]);
    } finally {
      await broker.close();
    }
  });
});
