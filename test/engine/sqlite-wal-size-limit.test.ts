import { statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openEngine } from '../../src/engine/index.js';
import { temporaryDirectory } from '../temporary-directory.js';

/**
 * SQLite reuses its WAL from the start once a checkpoint copied all of it, but keeps the file at
 * the largest size it ever reached unless `journal_size_limit` says otherwise. A reader that held
 * a snapshot for a while (a backup, a `sqlite3` shell left in a transaction, a large batch) let
 * the WAL grow past its usual few MiB, and the file stayed that large for as long as the engine
 * kept the database open: measured, 438 MB for the rest of the process after a 30 s read.
 */
const dir = temporaryDirectory('leaseq-wal-size-limit-');

const MiB = 1024 * 1024;
const walSize = (file: string) => statSync(`${file}-wal`).size;

describe('SQLite: the WAL file shrinks back after a reader held it from being reset', () => {
  it('is cut back to at most 16 MiB once the reader is gone and the WAL is reset', async () => {
    const file = join(dir, 'wal-limit.db');
    const engine = await openEngine(`sqlite:${file}`);
    try {
      const queue = await engine.queue('big', { visibility: 600_000 });
      await queue.publish(0, { id: 'first' });
      const reader = new Database(file, { readonly: true });
      try {
        reader.prepare('BEGIN').run();
        reader.prepare('SELECT COUNT(*) FROM leaseq_jobs').get();
        const payload = 'x'.repeat(256 * 1024);
        await queue.publishBatch(
          1,
          Array.from({ length: 100 }, (_, index) => ({ id: `big-${index}`, payload })),
        );
        expect(walSize(file)).toBeGreaterThan(24 * MiB);
        reader.prepare('COMMIT').run();
      } finally {
        reader.close();
      }
      for (let now = 2; now < 5; now += 1) await queue.publish(now, { id: `after-${now}` });
      expect(walSize(file)).toBeLessThanOrEqual(16 * MiB);
      expect((await queue.stats(5)).ready).toBe(104);
    } finally {
      await engine.close();
    }
  });
});
