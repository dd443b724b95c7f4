import { afterAll, describe, expect, it, vi } from 'vitest';
import { DELETE_STEP } from '../../src/engine/sql/delete-in-steps.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { queueName } from '../conformance/engines.js';
import { TurnCounter } from '../event-loop-turns.js';
import { sqlEngineFactories } from './transaction-table.js';

/**
 * R28: a cancel of a ready job closes its gap by moving the jobs on its shorter side one place.
 * On SQLite that was one statement over up to half the band, which held the process: the cancels
 * of 200 jobs in the middle of 100,000 ready ones, sent together (one batch, as a server runs a
 * request's), held it for 98 s. The jobs move DELETE_STEP positions at a time from the gap
 * outward, the event loop turning between two steps; on PostgreSQL still one statement.
 */
const sqlEngines = sqlEngineFactories();
afterAll(async () => {
  await Promise.all(sqlEngines.map((factory) => factory.cleanup()));
});

const SHIFT = /^\s*UPDATE leaseq_jobs SET ready_pos = ready_pos [+-] 1\b/;
const COUNT = 2 * DELETE_STEP + DELETE_STEP / 2;
const ids = Array.from({ length: COUNT }, (_, n) => `j${n}`);
/** Near the middle, one on each side: the jobs above the first move down, below the second up. */
const CANCELLED = [`j${COUNT / 2}`, `j${COUNT / 2 - 7}`];

describe.each(sqlEngines)('cancels in the middle of a long band on $name', (factory) => {
  it('R28 keep the order of the jobs left, each gap closed', async () => {
    const engine = await factory.open();
    const name = queueName('cancel-gap');
    try {
      const queue = await engine.queue(name, { visibility: 60_000 });
      for (let start = 0; start < COUNT; start += DELETE_STEP) {
        await queue.publishBatch(
          1,
          ids.slice(start, start + DELETE_STEP).map((id) => ({ id })),
        );
      }
      const cancelled = await Promise.all(CANCELLED.map((id) => queue.cancel(2, id)));
      expect(cancelled).toEqual([true, true]);
      const left = ids.filter((id) => !CANCELLED.includes(id));
      expect((await queue.inspect()).ready).toEqual(left);
      // Positions are contiguous again: a receive takes the front jobs, in order.
      const taken = await queue.reserve(3, { max: COUNT });
      expect(taken.map((delivery) => delivery.id)).toEqual(left);
    } finally {
      await engine.deleteQueue(name);
      await engine.close();
    }
  });
});

describe('a cancel in the middle of a long band on sqlite', () => {
  const sqlite = sqlEngines.find((factory) => factory.name === 'sqlite');

  it('R28 moves the jobs a step of positions at a time with turns of the event loop between', async () => {
    const engine = await (sqlite as (typeof sqlEngines)[number]).open();
    const name = queueName('cancel-gap-steps');
    /** Of each statement that moves jobs: how many positions, and the turns counted then. */
    const shifts: { positions: number; turns: number }[] = [];
    const loop = new TurnCounter();
    try {
      const queue = await engine.queue(name, { visibility: 60_000 });
      await queue.publishBatch(
        1,
        ids.map((id) => ({ id })),
      );
      const { run } = SqliteConnection.prototype;
      vi.spyOn(SqliteConnection.prototype, 'run').mockImplementation(function (
        this: SqliteConnection,
        sql: string,
        params: readonly SqlValue[] = [],
      ) {
        if (SHIFT.test(sql)) {
          shifts.push({ positions: Number(params[3]) - Number(params[2]) + 1, turns: loop.turns });
        }
        return run.call(this, sql, params);
      } as typeof run);
      loop.start();
      // Above the middle: the jobs after it, over two steps' worth, move down.
      expect(await queue.cancel(2, `j${COUNT / 2}`)).toBe(true);
      loop.stop();
      expect(shifts.map((shift) => shift.positions)).toEqual([
        DELETE_STEP,
        COUNT / 2 - 1 - DELETE_STEP,
      ]);
      expect(shifts[1]?.turns ?? 0).toBeGreaterThan(shifts[0]?.turns ?? 0);
      vi.restoreAllMocks();
      expect((await queue.inspect()).ready).toEqual(ids.filter((id) => id !== `j${COUNT / 2}`));
    } finally {
      loop.stop();
      vi.restoreAllMocks();
      await engine.deleteQueue(name);
      await engine.close();
    }
  });
});
