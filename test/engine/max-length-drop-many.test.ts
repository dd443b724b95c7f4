import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { LeaseQueue, type PublishInput, type QueueOptions } from '../../src/core/index.js';
import { openEngine, type QueueHandle } from '../../src/engine/index.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { postgresEngineForFile } from './postgres-engine-for-file.js';
import { roundTrips } from './round-trips.js';

/**
 * R31 overflow `dead-letter-oldest`: a publish into a queue far above its maxLength (lowered by
 * updateQueue, or filled by redrives and requeues) drops every job beyond it in that one call.
 * It read each dying job by a statement of its own, which SQLite planned as a read of every job
 * of the queue: 20,000 jobs took minutes, the whole file locked. The jobs die by statements per
 * band, in the core's order: a group's next member that goes on into a lower band dies next.
 */
const DROPPED = 2000;
const OPTIONS: QueueOptions = { visibility: 30_000 };

/** Ungrouped jobs of priority 5 with two groups among them: G's next member goes on in band 0. */
function jobs(): PublishInput[] {
  return [
    { id: 'g1', group: 'G', priority: 5 },
    { id: 'g2', group: 'G', priority: 0 },
    ...Array.from({ length: DROPPED / 2 }, (_, n) => ({ id: `a${n}`, priority: 5 })),
    { id: 'h1', group: 'H', priority: 5 },
    { id: 'h2', group: 'H', priority: 5 },
    ...Array.from({ length: DROPPED / 2 }, (_, n) => ({ id: `b${n}`, priority: 5 })),
  ];
}

async function fill(queue: QueueHandle): Promise<void> {
  const all = jobs();
  for (let start = 0; start < all.length; start += 500) {
    await queue.publishBatch(1, all.slice(start, start + 500));
  }
}

/** What the core leaves: the dead in the order they died, and the ready jobs. */
function expected(): { dead: string[]; ready: string[] } {
  const core = new LeaseQueue(OPTIONS);
  core.publishBatch(1, jobs());
  core.reconfigure({ ...OPTIONS, maxLength: 3, overflow: 'dead-letter-oldest' });
  core.publish(2, { id: 'last', priority: 9 });
  const view = core.inspect();
  return { dead: view.dead.map((job) => job.id), ready: view.ready };
}

async function state(queue: QueueHandle): Promise<{ dead: string[]; ready: string[] }> {
  const view = await queue.inspect();
  return { dead: view.dead.map((job) => job.id), ready: view.ready };
}

describe('R31 a publish that drops thousands of jobs beyond maxLength', () => {
  // Made and removed around this block (made inside a test, it would stay behind).
  const directory = temporaryDirectory('leaseq-drop-many-');

  it('SQLite: reads them by ranges of the ready index, a few statements in all, in the core order', async () => {
    const file = join(directory, 'drop.db');
    const engine = await openEngine(`sqlite:${file}`);
    const queries: [string, SqlValue[]][] = [];
    try {
      const queue = await engine.queue('drop', OPTIONS);
      await fill(queue);
      await engine.updateQueue('drop', { maxLength: 3, overflow: 'dead-letter-oldest' });
      const query = SqliteConnection.prototype.query;
      const spy = vi.spyOn(SqliteConnection.prototype, 'query').mockImplementation(function (
        this: SqliteConnection,
        sql: string,
        params: readonly SqlValue[] = [],
      ) {
        queries.push([sql, [...params]]);
        return query.call(this, sql, params) as never;
      });
      try {
        await queue.publish(2, { id: 'last', priority: 9 });
      } finally {
        spy.mockRestore();
      }
      expect(await state(queue)).toEqual(expected());
      expect((await queue.stats(2)).deadLetters).toEqual({ maxlen: DROPPED + 2 });
    } finally {
      await engine.close();
    }
    expect(queries.length).toBeLessThan(50);
    const db = new Database(file, { readonly: true });
    try {
      for (const [sql, params] of queries.filter(([text]) =>
        /state = 'ready' AND ready_pos/.test(text),
      )) {
        const plan = (
          db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]
        ).map((row) => row.detail);
        expect(plan.join('; ')).toContain('USING INDEX leaseq_jobs_ready');
      }
    } finally {
      db.close();
    }
  });

  const postgres = postgresEngineForFile('drop-many');

  it('PostgreSQL: in a few round trips, in the core order', async (context) => {
    const { engine } = postgres;
    if (engine === undefined) return context.skip(postgres.skip);
    const name = postgres.name('drop');
    const queue = await engine.queue(name, OPTIONS);
    try {
      await fill(queue);
      await engine.updateQueue(name, { maxLength: 3, overflow: 'dead-letter-oldest' });
      const sent = await roundTrips(() => queue.publish(2, { id: 'last', priority: 9 }));
      expect(sent.length).toBeLessThan(50);
      expect(await state(queue)).toEqual(expected());
    } finally {
      await engine.deleteQueue(name);
    }
  });
});
