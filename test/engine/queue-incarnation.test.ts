import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Engine, openEngine, type QueueHandle } from '../../src/engine/index.js';
import { BULK_STEP } from '../../src/engine/sql/bulk-steps.js';
import { postgresUrl, queueName } from '../conformance/engines.js';
import { postgresSkipReason } from '../crash/postgres.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { beforeStep } from './between-steps.js';

/**
 * R20: a queue's row says which making of the queue under its name it is (migrations sqlite
 * 0019, postgres 0023), so that a call taking steps ends where its queue was deleted and made
 * again between them. Storage made before the migration gets it when opened: its queues, and
 * the names of queues deleted before, count from 0, a queue made again after it from 1.
 */
const dir = temporaryDirectory('leaseq-incarnation-');
afterEach(() => {
  vi.restoreAllMocks();
});

/** Runs raw statements on a storage; answers the rows of the last. */
type Raw = (sql: string) => Promise<Record<string, unknown>[]>;

/** How a storage is reached: opened as an engine, or with raw statements. */
interface Storage {
  open(): Promise<Engine>;
  raw<T>(use: (run: Raw) => Promise<T>): Promise<T>;
  /** The version of the migration that adds the column. */
  version: number;
}

/** `count` dead jobs in `queue`, rejected in one session. */
async function deadJobs(queue: QueueHandle, now: number, count: number): Promise<void> {
  const jobs = Array.from({ length: count }, (_, n) => ({ id: `d${n}` }));
  for (let start = 0; start < count; start += 500) {
    await queue.publishBatch(now, jobs.slice(start, start + 500));
  }
  const session = await queue.openSession(now);
  let last: number | undefined;
  for (;;) {
    const taken = await queue.reserve(now, { max: 500, session });
    if (taken.length === 0) break;
    last = taken.at(-1)?.token;
  }
  if (last !== undefined) await queue.nackUpTo(now, session, last, { requeue: false });
  await queue.closeSession(now, session);
}

async function upgradeKeepsQueuesApart(storage: Storage): Promise<void> {
  const kept = queueName('kept');
  const gone = queueName('gone');
  const before = await storage.open();
  try {
    await deadJobs(await before.queue(kept), 1, 2 * BULK_STEP + 500);
    await before.queue(gone);
    expect(await before.deleteQueue(gone)).toBe(true);
  } finally {
    await before.close();
  }
  // The schema as the migrations before this one left it.
  await storage.raw(async (run) => {
    await run('ALTER TABLE leaseq_queues DROP COLUMN incarnation');
    await run('ALTER TABLE leaseq_counter_floors DROP COLUMN incarnation');
    await run(`DELETE FROM leaseq_schema WHERE version = ${storage.version}`);
  });

  const engine = await storage.open();
  try {
    await engine.queue(gone);
    expect(
      await storage.raw((run) =>
        run(
          `SELECT name, CAST(incarnation AS INTEGER) AS incarnation FROM leaseq_queues
           WHERE name IN ('${kept}', '${gone}') ORDER BY name DESC`,
        ),
      ),
    ).toEqual([
      { name: kept, incarnation: 0 },
      { name: gone, incarnation: 1 },
    ]);
    // A purge of all on the queue from before: made again between its steps, it is another.
    const queue = await engine.queue(kept);
    let again: QueueHandle | undefined;
    beforeStep(2, async () => {
      expect(await engine.deleteQueue(kept)).toBe(true);
      again = await engine.queue(kept);
      await deadJobs(again, 5, 50);
    });
    expect(await queue.purge(5)).toBe(BULK_STEP);
    expect(await again?.stats(5)).toMatchObject({ dead: 50, purged: 0 });
  } finally {
    await engine.deleteQueue(kept);
    await engine.deleteQueue(gone);
    await engine.close();
  }
}

describe('R20 the making of a queue, on storage made before it was kept', () => {
  it('SQLite: a file from before gets it when opened; its queues count from 0, one made again after from 1', async () => {
    const file = join(dir, 'before.db');
    await upgradeKeepsQueuesApart({
      open: () => openEngine(`sqlite:${file}`),
      raw: async (use) => {
        const db = new Database(file);
        try {
          return await use(async (sql) => {
            const statement = db.prepare(sql);
            if (statement.reader) return statement.all() as Record<string, unknown>[];
            statement.run();
            return [];
          });
        } finally {
          db.close();
        }
      },
      version: 19,
    });
  });

  it('PostgreSQL: a database from before gets it when opened; its queues count from 0, one made again after from 1', async (context) => {
    const skip = await postgresSkipReason();
    if (skip !== undefined) return context.skip(skip);
    const schema = `lq_incarnation_${process.pid}_${Math.floor(Math.random() * 36 ** 6).toString(36)}`;
    const url = new URL(postgresUrl());
    url.searchParams.set('options', `-c search_path=${schema}`);
    const admin = new pg.Client({ connectionString: postgresUrl() });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA ${schema}`);
      await upgradeKeepsQueuesApart({
        open: () => openEngine(url.toString()),
        raw: async (use) => {
          await admin.query(`SET search_path TO ${schema}`);
          try {
            return await use(async (sql) => (await admin.query(sql)).rows);
          } finally {
            await admin.query('RESET search_path');
          }
        },
        version: 23,
      });
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    }
  });
});
