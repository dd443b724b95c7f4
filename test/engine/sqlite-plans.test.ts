import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
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
