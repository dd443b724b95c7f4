import { describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock, type ScheduleOptions } from '../../src/broker/index.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

// R25: a schedule set again with the same definition stays as it is. The same definition spelt
// another way (UTC named or left to the default, other spaces in the cron, its seconds field
// given as 0, a zone or a weekday name in another case) is still the same definition: a deploy
// that writes it so must not restart the schedule.

const engines = await useConformanceEngines();

const HOUR = 3_600_000;
// Years after the times of the other test files: their passes, over the storage PostgreSQL
// shares, find nothing of these schedules due.
const T0 = Date.UTC(2031, 4, 12, 8, 30);

describeEngines(engines, (h) => {
  describe('R25 a definition spelt another way', () => {
    it('R25 a schedule set again in another spelling of its definition stays as it was, its due occurrence still due', async () => {
      const name = h.deleteAfter(h.queueName('spelt'));
      const clock = new ManualClock(T0);
      const broker = new EngineBroker(h.engine(), { clock });
      const q = await broker.queue(name);
      await q.schedule('hourly', '0 * * * *', { timezone: 'UTC', payload: { n: 1 } });
      // 09:00 is due, not yet published: each spelling below must leave it due.
      clock.set(T0 + HOUR / 2 + 60_000);
      const spellings: [string, ScheduleOptions][] = [
        ['0 * * * *', { payload: { n: 1 } }],
        ['0 * * * *', { timezone: 'Etc/UTC', payload: { n: 1 } }],
        ['  0   * * *  * ', { timezone: 'utc', payload: { n: 1 } }],
        ['0 0 * * * *', { payload: { n: 1 } }],
        ['0 0 * * * ?', { timezone: 'GMT', payload: { n: 1 } }],
      ];
      for (const [when, options] of spellings) {
        expect(await q.schedule('hourly', when, options)).toMatchObject({
          createdAt: T0,
          nextAt: T0 + HOUR * 1.5,
        });
      }
      // As set first, nothing published: 09:00 is still due. (No pass here: a pass lists every
      // schedule of a storage other test files share.)
      const [stored] = await q.schedules();
      expect(stored).toMatchObject({ cron: '0 * * * *', timezone: 'UTC', createdAt: T0 });
      expect(stored?.lastAt).toBeUndefined();
      // Another meaning replaces it, counted from now: another minute, or a zone not UTC.
      expect(await q.schedule('hourly', '0 0 * * * *', { payload: { n: 2 } })).toMatchObject({
        createdAt: T0 + HOUR / 2 + 60_000,
      });
      clock.advance(1000);
      expect(await q.schedule('hourly', '1 0 * * * *', { payload: { n: 2 } })).toMatchObject({
        createdAt: T0 + HOUR / 2 + 61_000,
      });
      clock.advance(1000);
      expect(
        await q.schedule('hourly', '1 0 * * * *', {
          timezone: 'Asia/Kolkata',
          payload: { n: 2 },
        }),
      ).toMatchObject({ createdAt: T0 + HOUR / 2 + 62_000 });
    });

    it('R25 a payload with the keys of its objects in another order is the same definition', async () => {
      const name = h.deleteAfter(h.queueName('payload'));
      const clock = new ManualClock(T0);
      const broker = new EngineBroker(h.engine(), { clock });
      const q = await broker.queue(name);
      await q.schedule('pulse', 10_000, { payload: { a: 1, b: { c: 2, d: [1, { e: 3, f: 4 }] } } });
      clock.advance(1000);
      expect(
        await q.schedule('pulse', 10_000, {
          payload: { b: { d: [1, { f: 4, e: 3 }], c: 2 }, a: 1 },
        }),
      ).toMatchObject({ createdAt: T0, payload: { a: 1, b: { c: 2, d: [1, { e: 3, f: 4 }] } } });
      // An array in another order is another payload.
      expect(
        await q.schedule('pulse', 10_000, {
          payload: { a: 1, b: { c: 2, d: [{ e: 3, f: 4 }, 1] } },
        }),
      ).toMatchObject({ createdAt: T0 + 1000 });
    });

    it('R25 a zone name in another case and weekday or month names for their numbers are the same definition', async () => {
      const name = h.deleteAfter(h.queueName('names'));
      const clock = new ManualClock(T0);
      const broker = new EngineBroker(h.engine(), { clock });
      const q = await broker.queue(name);
      await q.schedule('weekdays', '0 9 * * MON-FRI', { timezone: 'Europe/Paris' });
      clock.advance(60_000);
      for (const [when, timezone] of [
        ['0 9 * * 1-5', 'Europe/Paris'],
        ['0 9 * * mon-fri', 'europe/paris'],
        ['0 0 9 ? * Mon-Fri', 'EUROPE/PARIS'],
      ] as const) {
        expect(await q.schedule('weekdays', when, { timezone })).toMatchObject({
          cron: '0 9 * * MON-FRI',
          timezone: 'Europe/Paris',
          createdAt: T0,
        });
      }
      await q.schedule('twice-a-year', '0 9 1 JAN,JUL *');
      expect(await q.schedule('twice-a-year', '0 9 1 1,7 *')).toMatchObject({
        cron: '0 9 1 JAN,JUL *',
        createdAt: T0 + 60_000,
      });
      // Sunday is another day.
      expect(
        await q.schedule('weekdays', '0 9 * * MON-SUN', { timezone: 'Europe/Paris' }),
      ).toMatchObject({ createdAt: T0 + 60_000, cron: '0 9 * * MON-SUN' });
    });
  });
});
