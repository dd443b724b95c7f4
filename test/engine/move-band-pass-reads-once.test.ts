import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PublishInput } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { MOVE_CHUNK } from '../../src/engine/sql/bulk-steps.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { useConformanceEngines } from '../conformance/engines.js';
import { describeEngines, type EngineHarness } from '../conformance/suite.js';
import { beforeStep } from './between-steps.js';

/**
 * R20, R26: a moveJobs of all that takes steps on a SQL engine reads the queue's bands once
 * more, after its delayed jobs, where the queue's time moved on between its steps (for the
 * delayed jobs that came due meanwhile). That pass looks for jobs that became ready since the
 * call began: it does not read again, one statement each, the jobs the call looked at and
 * left, which made one step of the call as long as the whole band.
 */
const engines = (await useConformanceEngines({ client: false })).filter(
  (engine) => engine.name !== 'memory',
);

afterEach(() => {
  vi.restoreAllMocks();
});

const ids = (prefix: string, count: number): string[] =>
  Array.from({ length: count }, (_, n) => `${prefix}${n}`);

async function publishAll(queue: QueueHandle, now: number, jobs: PublishInput[]): Promise<void> {
  for (let start = 0; start < jobs.length; start += 500) {
    await queue.publishBatch(now, jobs.slice(start, start + 500));
  }
}

/**
 * Counts the statements that read a band of ready jobs from a place in it, and the rows they
 * answer, on either engine.
 */
function countBandReads(): { count: number; rows: number } {
  const counted = { count: 0, rows: 0 };
  for (const connection of [SqliteConnection, PostgresConnection]) {
    const query = connection.prototype.query;
    vi.spyOn(connection.prototype, 'query').mockImplementation(async function <Row extends object>(
      this: SqliteConnection | PostgresConnection,
      sql: string,
      params?: readonly SqlValue[],
    ): Promise<Row[]> {
      const rows = (await query.call(this, sql, params)) as Row[];
      if (sql.includes("state = 'ready' AND ready_pos > ?")) {
        counted.count += 1;
        counted.rows += rows.length;
      }
      return rows;
    });
  }
  return counted;
}

describeEngines(engines, (h: EngineHarness) => {
  describe('R26 R20 the bands read once more after time moved', () => {
    it('R26 a stepped moveJobs does not read again the jobs it looked at and left', async () => {
      const q = await h.queue();
      const to = await h.engine().queue(h.queueName('to'));
      // Three steps of jobs; all but the last stay, the target holding their ids.
      const all = ids('j', 3 * MOVE_CHUNK);
      const staying = all.slice(0, -1);
      await publishAll(
        q,
        1,
        all.map((id) => ({ id })),
      );
      await publishAll(
        to,
        1,
        staying.map((id) => ({ id })),
      );
      // The queue's time moves on between the first two steps.
      beforeStep(2, async () => {
        await q.stats(10);
      });
      const reads = countBandReads();
      expect(await q.moveJobs(5, { to: to.name })).toBe(1);
      // Each step reads its chunk in a statement or two; the pass once more, one per band,
      // reads none of the jobs again.
      expect(reads.count).toBeLessThan(20);
      expect(reads.rows).toBeLessThanOrEqual(all.length + 1);
      expect((await q.inspect()).ready).toEqual(staying);
      expect((await to.inspect()).ready).toEqual(all);
    });

    it('R26 a stepped moveJobs still moves the delayed jobs that came due, passing over those it left', async () => {
      const q = await h.queue();
      const to = await h.engine().queue(h.queueName('to'));
      const ready = ids('r', 2 * MOVE_CHUNK);
      const delayed = ids('d', MOVE_CHUNK + 500);
      await publishAll(q, 1, [
        ...ready.map((id) => ({ id })),
        ...delayed.map((id) => ({ id, delay: 100 })),
      ]);
      // The ready ones stay but the last; the delayed ones move.
      await publishAll(
        to,
        1,
        ready.slice(0, -1).map((id) => ({ id })),
      );
      // After two steps (the ready jobs), all delayed ones come due: none was read as delayed.
      beforeStep(3, async () => {
        expect(await q.stats(200)).toMatchObject({ delayed: 0 });
      });
      const reads = countBandReads();
      expect(await q.moveJobs(5, { to: to.name })).toBe(1 + delayed.length);
      expect(reads.count).toBeLessThan(20);
      expect((await q.inspect()).ready).toEqual(ready.slice(0, -1));
      expect((await to.inspect()).ready).toEqual([...ready.slice(0, -1), ready.at(-1), ...delayed]);
    });

    it('R26 a stepped moveJobs passes over the delayed jobs it left that came due, not one statement each', async () => {
      const q = await h.queue();
      const to = await h.engine().queue(h.queueName('to'));
      // Two steps of delayed jobs that stay (the target holds their ids), read as delayed and
      // due before the third step; then the jobs that move, still delayed then.
      const left = ids('d', 2 * MOVE_CHUNK);
      const moving = ids('e', MOVE_CHUNK - 1);
      await publishAll(q, 1, [
        ...left.map((id) => ({ id, delay: 100 })),
        ...moving.map((id) => ({ id, delay: 1_000_000 })),
      ]);
      await publishAll(
        to,
        1,
        left.map((id) => ({ id })),
      );
      beforeStep(3, async () => {
        expect(await q.stats(200)).toMatchObject({ ready: left.length });
      });
      const reads = countBandReads();
      expect(await q.moveJobs(5, { to: to.name })).toBe(moving.length);
      expect(reads.count).toBeLessThan(20);
      expect((await q.inspect()).ready).toEqual(left);
      expect((await to.inspect()).ready).toEqual([...left, ...moving]);
    });
  });
});
