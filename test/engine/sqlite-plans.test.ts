import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { openEngine } from '../../src/engine/index.js';
import { SQLITE_DIALECT } from '../../src/engine/sqlite/sqlite-engine.js';

const dir = mkdtempSync(join(tmpdir(), 'leaseq-sqlite-plans-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('R17 SQLite: stats reads the age of the oldest ready job from one index entry', () => {
  it('the oldest ready job is the first entry of the queue in leaseq_jobs_ready_since, requeued jobs at the front included', async () => {
    const file = join(dir, 'oldest.db');
    const engine = await openEngine(`sqlite:${file}`);
    try {
      const queue = await engine.queue('oldest', { visibility: 30_000 });
      for (let batch = 0; batch < 3; batch += 1) {
        await queue.publishBatch(
          100 + batch,
          Array.from({ length: 500 }, () => ({})),
        );
      }
      // The front job is requeued later (R9): the oldest ready job is no longer at the front.
      const [front] = await queue.reserve(200, { max: 1 });
      await queue.nack(210, (front as { token: number }).token);
      expect((await queue.stats(300)).oldestReadyAge).toBe(200);
    } finally {
      await engine.close();
    }

    const db = new Database(file, { readonly: true });
    try {
      const plan = (
        db.prepare(`EXPLAIN QUERY PLAN ${SQLITE_DIALECT.oldestReadyOf('?')}`).all('oldest') as {
          detail: string;
        }[]
      ).map((row) => row.detail);
      // A search of the queue's range in the index, not a scan of its ready jobs.
      expect(plan).toEqual([
        'SEARCH leaseq_jobs USING COVERING INDEX leaseq_jobs_ready_since (queue=?)',
      ]);
      const [oldest] = db.prepare(SQLITE_DIALECT.oldestReadyOf('?')).all('oldest') as {
        since: number;
      }[];
      expect(oldest?.since).toBe(100);
    } finally {
      db.close();
    }
  });
});

describe('R17 SQLite: inspect and deliveries read the live deliveries by their token index', () => {
  it('the statements that list live deliveries search leaseq_jobs_token, not every job of the queue', async () => {
    const file = join(dir, 'active.db');
    const prepared: string[] = [];
    const prepare = Database.prototype.prepare;
    const spy = vi.spyOn(Database.prototype, 'prepare').mockImplementation(function (
      this: Database.Database,
      source: string,
    ) {
      prepared.push(source);
      return prepare.call(this, source);
    });
    const engine = await openEngine(`sqlite:${file}`);
    try {
      const queue = await engine.queue('active', { visibility: 30_000 });
      await queue.publishBatch(
        100,
        Array.from({ length: 2000 }, () => ({})),
      );
      await queue.reserve(200, { max: 3 });
      prepared.length = 0;
      const view = await queue.inspect({ limit: 10 });
      expect(view.active.map((entry) => entry.token)).toEqual([1, 2, 3]);
      expect((await queue.deliveries()).map((entry) => entry.token)).toEqual([1, 2, 3]);
    } finally {
      spy.mockRestore();
      await engine.close();
    }
    const listing = prepared.filter((sql) => /state = 'active'\s+ORDER BY token/.test(sql));
    expect(listing.length).toBeGreaterThanOrEqual(2);
    const db = new Database(file, { readonly: true });
    try {
      for (const sql of listing) {
        const parameters = (sql.match(/\?/g) ?? []).map((_, index) =>
          index === 0 ? 'active' : 10,
        );
        const plan = (
          db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...parameters) as { detail: string }[]
        ).map((row) => row.detail);
        expect(plan).toEqual([
          'SEARCH leaseq_jobs USING INDEX leaseq_jobs_token (queue=? AND token>?)',
        ]);
      }
    } finally {
      db.close();
    }
  });
});
