import { describe, expect, it } from 'vitest';
import type { ScheduleRecord } from '../../src/engine/index.js';
import { openEngine } from '../../src/engine/index.js';
import { sqliteAndScratchPostgres } from './postgres-scratch.js';

// EngineTransaction.advanceSchedules (ScheduleMove, exported): the records of many schedules
// moved on at once. Six parameters a move made one statement of 12,000 moves more than a
// statement takes (SQLite 32,766, PostgreSQL 65,535): the call failed, moving none. (On
// PostgreSQL the first statement of a transaction goes with its values written into its text,
// where there is no such limit: here the call comes after a statement of the transaction's own.)

const COUNT = 12_000;

const { targets, postgresSkip } = sqliteAndScratchPostgres('advance_many');

describe.each(targets)('R25 advanceSchedules on $name', (target) => {
  it('R25 moves the records of 12,000 schedules in one call, each once', async (context) => {
    const skip = target.name === 'postgres' ? postgresSkip() : undefined;
    if (skip !== undefined) return context.skip(skip);
    const engine = await openEngine(target.url());
    try {
      await engine.queue('many');
      const records: ScheduleRecord[] = Array.from({ length: COUNT }, (_, n) => ({
        queue: 'many',
        name: `s${n}`,
        cron: undefined,
        every: 1_000,
        timezone: undefined,
        payload: { n },
        createdAt: 0,
        lastAt: n % 2 === 0 ? null : 500,
      }));
      for (let start = 0; start < COUNT; start += 1_000) {
        await Promise.all(
          records.slice(start, start + 1_000).map((record) => engine.putSchedule(record)),
        );
      }
      const read = await engine.listSchedules('many');
      expect(read).toHaveLength(COUNT);
      const transaction = engine.transaction?.bind(engine);
      if (transaction === undefined) throw new Error('a SQL engine has transactions');
      const move = (to: number) =>
        transaction(async (tx) => {
          const advance = tx.advanceSchedules?.bind(tx);
          if (advance === undefined) throw new Error('a SQL engine advances schedules at once');
          await tx.query('SELECT 1');
          return advance(read.map((schedule) => ({ read: schedule, to })));
        });
      expect((await move(1_000)).every((moved) => moved)).toBe(true);
      // As read before the first move: none is still that.
      expect((await move(2_000)).some((moved) => moved)).toBe(false);
      const after = await engine.listSchedules('many');
      expect(after.every((schedule) => schedule.lastAt === 1_000)).toBe(true);
    } finally {
      await engine.close();
    }
  }, 60_000);
});
