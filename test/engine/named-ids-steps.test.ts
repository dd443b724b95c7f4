import { afterAll, describe, expect, it, vi } from 'vitest';
import { BULK_STEP } from '../../src/engine/sql/bulk-steps.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { queueName } from '../conformance/engines.js';
import { sqlEngineFactories } from './transaction-table.js';

/**
 * R14: a redrive or purge of named ids alone in its call takes steps of BULK_STEP ids, each id
 * once (a job redriven, then dead again, is not redriven twice). The repeats were taken out of
 * all the ids at once, before the first step: for 1,000,000 ids that held the event loop for
 * 1–2 s (2.4–3.6 s on a loaded machine). Each step passes over the repeats of its own ids.
 */
const sqlEngines = sqlEngineFactories();
afterAll(async () => {
  await Promise.all(sqlEngines.map((factory) => factory.cleanup()));
});

describe.each(sqlEngines)('a redrive of named ids with repeats on $name', (factory) => {
  it('R14 redrives each named dead job once, in the order first named', async () => {
    const engine = await factory.open();
    const name = queueName('named-repeats');
    try {
      const queue = await engine.queue(name, { visibility: 60_000 });
      const count = 2 * BULK_STEP + 10;
      const ids = Array.from({ length: count }, (_, n) => `j${n}`);
      for (let start = 0; start < count; start += BULK_STEP) {
        await queue.publishBatch(
          1,
          ids.slice(start, start + BULK_STEP).map((id) => ({ id })),
        );
      }
      // Every one dies (R31) as one more is published into a queue of one.
      await engine.updateQueue(name, { maxLength: 1, overflow: 'dead-letter-oldest' });
      await queue.publish(1, { id: 'last' });
      // Backwards, each id twice over, some far apart: a step's ids are named again in the
      // next, and the list ends with repeats alone.
      const named = [...ids].reverse().flatMap((id, n) => (n % 3 === 0 ? [id, id] : [id]));
      const redriven = await queue.redrive(2, [...named, ...ids.slice(0, 50), ...ids]);
      expect(redriven).toBe(count);
      expect((await queue.inspect()).ready).toEqual(['last', ...[...ids].reverse()]);
      expect(await queue.stats(3)).toMatchObject({ ready: count + 1, dead: 0, redriven: count });
    } finally {
      await engine.deleteQueue(name);
      await engine.close();
    }
  });
});

describe('a redrive of many named ids on sqlite', () => {
  const sqlite = sqlEngines.find((factory) => factory.name === 'sqlite');

  it('R14 looks at no more than a step of the ids before its first step reads the storage', async () => {
    const engine = await (sqlite as (typeof sqlEngines)[number]).open();
    const name = queueName('named-first-step');
    /** Calls of Set.prototype.add counted by the first look-up of a named id. */
    let addsAtFirstLookup: number | undefined;
    let adds = 0;
    try {
      const queue = await engine.queue(name, { visibility: 60_000 });
      const ids = Array.from({ length: 5 * BULK_STEP }, (_, n) => `absent-${n}`);
      const { add } = Set.prototype;
      // `new Set(ids)` calls `add` for each id once it is replaced (as every such call does).
      vi.spyOn(Set.prototype, 'add').mockImplementation(function (
        this: Set<unknown>,
        value: unknown,
      ) {
        adds += 1;
        return add.call(this, value);
      });
      const { query } = SqliteConnection.prototype;
      vi.spyOn(SqliteConnection.prototype, 'query').mockImplementation(function (
        this: SqliteConnection,
        sql: string,
        params: readonly SqlValue[] = [],
      ) {
        if (/FROM leaseq_jobs WHERE queue = \? AND id = \?/.test(sql)) addsAtFirstLookup ??= adds;
        return query.call(this, sql, params);
      } as typeof query);
      adds = 0;
      expect(await queue.redrive(1, ids)).toBe(0);
      expect(addsAtFirstLookup).toBeDefined();
      expect(addsAtFirstLookup).toBeLessThan(3 * BULK_STEP);
    } finally {
      vi.restoreAllMocks();
      await engine.deleteQueue(name);
      await engine.close();
    }
  });
});
