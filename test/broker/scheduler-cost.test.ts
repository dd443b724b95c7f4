import { CronPattern } from 'croner';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { MemoryEngine } from '../../src/engine/memory/memory-engine.js';
import { countingTurns } from '../event-loop-turns.js';

const T0 = Date.UTC(2026, 10, 30, 8, 30);
const HOUR = 3_600_000;

/**
 * Counts the cron expressions croner parses: each `new Cron` parses its own and a default one.
 * `parse` is private in croner's types, though a plain prototype method.
 */
function countParses() {
  return vi.spyOn(CronPattern.prototype as unknown as { parse(): void }, 'parse');
}

async function memoryBroker() {
  const engine = new MemoryEngine();
  const clock = new ManualClock(T0);
  return { engine, clock, broker: new EngineBroker(engine, { clock }) };
}

describe('R25 the cost of a scheduler pass', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('R25 a pass parses each cron definition once, not once for each of its schedules', async () => {
    const { clock, broker } = await memoryBroker();
    try {
      const queue = await broker.queue('shared');
      for (let n = 0; n < 1000; n++) {
        await queue.schedule(`s${n}`, '0 3 * * *', n % 2 ? { timezone: 'Europe/Paris' } : {});
      }
      const parses = countParses();
      clock.set(T0 + 1000);
      expect(await broker.scheduler().runOnce()).toEqual([]);
      // Two definitions: at most two Crons (four parses), whatever an earlier call kept.
      expect(parses.mock.calls.length).toBeLessThanOrEqual(4);
    } finally {
      await broker.close();
    }
  });

  it('R25 a pass over 1000 unchanged schedules with nothing due parses no cron again', async () => {
    const { clock, broker } = await memoryBroker();
    try {
      const queue = await broker.queue('distinct');
      // 1000 definitions (a daily minute each, in two zones): more than parsed crons are kept.
      for (let n = 0; n < 1000; n++) {
        const cron = `${n % 60} ${Math.floor(n / 60)} * * *`;
        await queue.schedule(`s${n}`, cron, n % 2 ? { timezone: 'Asia/Tokyo' } : {});
      }
      const scheduler = broker.scheduler();
      clock.set(T0 + 1000);
      expect(await scheduler.runOnce()).toEqual([]);
      const parses = countParses();
      clock.set(T0 + 2000);
      expect(await scheduler.runOnce()).toEqual([]);
      expect(parses.mock.calls.length).toBe(0);
    } finally {
      await broker.close();
    }
  });

  it('R25 a pass reads again a schedule changed in storage since it found nothing due', async () => {
    const { engine, clock, broker } = await memoryBroker();
    try {
      const queue = await broker.queue('changed');
      await queue.schedule('daily', '0 3 * * *');
      const scheduler = broker.scheduler();
      clock.set(T0 + 1000);
      expect(await scheduler.runOnce()).toEqual([]);
      // Another process replaces it with one due at 08:00, set at 06:30.
      const [stored] = await engine.listSchedules('changed');
      if (stored === undefined) throw new Error('schedule daily is gone');
      const at = Date.UTC(2026, 10, 30, 8);
      await engine.putSchedule({ ...stored, cron: '0 8 * * *', createdAt: T0 - 2 * HOUR });
      clock.set(T0 + 2000);
      expect(await scheduler.runOnce()).toMatchObject([
        { name: 'daily', at, id: 'daily@2026-11-30T08:00:00.000Z', duplicate: false },
      ]);
      clock.set(T0 + 3000);
      expect(await scheduler.runOnce()).toEqual([]);
      // Another process takes its record of that occurrence back: it is due again.
      const [published] = await engine.listSchedules('changed');
      if (published === undefined) throw new Error('schedule daily is gone');
      expect(published.lastAt).toBe(at);
      expect(await engine.advanceSchedule(published, null)).toBe(true);
      clock.set(T0 + 4000);
      expect(await scheduler.runOnce()).toMatchObject([{ name: 'daily', at, duplicate: true }]);
    } finally {
      await broker.close();
    }
  });

  it('R25 a long pass lets the event loop run: callbacks waiting before it run before it ends', async () => {
    const { clock, broker } = await memoryBroker();
    try {
      const queue = await broker.queue('long');
      for (let n = 0; n < 1000; n++) await queue.schedule(`s${n}`, HOUR);
      const scheduler = broker.scheduler();
      clock.set(T0 + 1000);
      // Nothing is due, so the pass waits on no storage call: only its own turns let these run.
      const { value: published, turns } = await countingTurns(() => scheduler.runOnce());
      expect(published).toEqual([]);
      // Not once at the end: every few hundred schedules.
      expect(turns).toBeGreaterThanOrEqual(2);
    } finally {
      await broker.close();
    }
  });
});
