import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { open, StorageLockedError } from '../../src/index.js';
import { temporaryDirectory } from '../temporary-directory.js';

// Two open() of one SQLite file in one process are two connections: the second waits for the
// first's write lock as another process's would, and its error says who may hold the lock.
const dir = temporaryDirectory('leaseq-lock-same-process-');

describe('SQLite: a second open() of the file in the same process', () => {
  it('waits for the transaction of the first and fails naming another open() of the file', async () => {
    const url = `sqlite:${join(dir, 'twice.db')}`;
    const first = await open(url);
    const second = await open(url, { busyTimeoutMs: 50 });
    try {
      const jobs = await second.queue('jobs');
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let inside!: () => void;
      const entered = new Promise<void>((resolve) => (inside = resolve));
      const transaction = first.transaction?.(async (tx) => {
        await tx.publish('jobs', { id: 'in-transaction' });
        inside();
        await held;
      });
      await entered;
      const refused = await jobs.publish({ id: 'meanwhile' }).catch((error: unknown) => error);
      release();
      await transaction;
      expect(refused).toBeInstanceOf(StorageLockedError);
      expect((refused as Error).message).toContain('another open() of the file in this process');
      // Nothing of the refused publish was written; once the lock is free the call goes through.
      expect((await jobs.publish({ id: 'after' })).duplicate).toBe(false);
      expect((await jobs.stats()).published).toBe(2);
    } finally {
      await second.close();
      await first.close();
    }
  });
});
