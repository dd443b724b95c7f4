import { afterAll, describe, expect, it, vi } from 'vitest';
import { DELETE_STEP } from '../../src/engine/sql/delete-in-steps.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { queueName } from '../conformance/engines.js';
import { TurnCounter } from '../event-loop-turns.js';
import { sqlEngineFactories } from './transaction-table.js';

/**
 * R34: `deadLetters()` is the whole dead set, in the order its jobs died. On SQLite it was one
 * statement, which held the process while it ran: 1,000,000 dead jobs, 40 s. It reads
 * DELETE_STEP dead jobs at a time through the dead index, the event loop turning between two,
 * within one read; on PostgreSQL still one statement.
 */
const sqlEngines = sqlEngineFactories();
afterAll(async () => {
  await Promise.all(sqlEngines.map((factory) => factory.cleanup()));
});

const COUNT = 2 * DELETE_STEP + 5;
const READ = /FROM leaseq_jobs\s+WHERE queue = \? AND state = 'dead'/;

describe.each(sqlEngines)('every dead letter of a long dead set on $name', (factory) => {
  it('R34 comes in the order they died, as the pages have them', async () => {
    const engine = await factory.open();
    const name = queueName('dead-letters-steps');
    /** Turns of the event loop counted at each read of dead jobs. */
    const readTurns: number[] = [];
    const loop = new TurnCounter();
    try {
      const queue = await engine.queue(name, { visibility: 60_000 });
      const ids = Array.from({ length: COUNT }, (_, n) => `j${n}`);
      for (let start = 0; start < COUNT; start += DELETE_STEP) {
        await queue.publishBatch(
          1,
          ids.slice(start, start + DELETE_STEP).map((id, n) => ({ id, payload: { n } })),
        );
      }
      // Every one dies (R31) as one more is published into a queue of one.
      await engine.updateQueue(name, { maxLength: 1, overflow: 'dead-letter-oldest' });
      await queue.publish(1, { id: 'last' });
      const { query } = SqliteConnection.prototype;
      vi.spyOn(SqliteConnection.prototype, 'query').mockImplementation(function (
        this: SqliteConnection,
        sql: string,
        params: readonly SqlValue[] = [],
      ) {
        if (READ.test(sql)) readTurns.push(loop.turns);
        return query.call(this, sql, params);
      } as typeof query);
      loop.start();
      const all = await queue.deadLetters();
      loop.stop();
      vi.restoreAllMocks();
      expect(all.map((dead) => dead.id)).toEqual(ids);
      expect(all[COUNT - 1]).toMatchObject({ payload: { n: 4 }, reason: 'maxlen' });
      const paged = await queue.deadLetterPage({ limit: 1000 });
      expect(all.slice(0, 1000)).toEqual(paged.deadLetters);
      if (factory.name === 'sqlite') {
        expect(readTurns).toHaveLength(3);
        const [first = 0, second = 0, third = 0] = readTurns;
        expect(second).toBeGreaterThan(first);
        expect(third).toBeGreaterThan(second);
      }
    } finally {
      loop.stop();
      vi.restoreAllMocks();
      await engine.deleteQueue(name);
      await engine.close();
    }
  });
});
