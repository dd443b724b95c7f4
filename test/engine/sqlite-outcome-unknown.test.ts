import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mayHaveTakenEffect, StorageUnavailableError } from '../../src/core/index.js';
import { openEngine } from '../../src/engine/index.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { WalSync } from '../../src/engine/sqlite/wal-sync.js';
import { temporaryDirectory } from '../temporary-directory.js';

/**
 * SQLite's disk failing under a call: at its commit, or at the sync of the WAL after it, the call
 * may or may not have taken effect (the commit may be in the WAL, and come back at the next
 * open), and its error says so (`mayHaveTakenEffect`); before its commit, nothing of it was
 * written, and its error says nothing of the kind. Faults are put in place of the I/O where it
 * fails (the WAL's sync, SQLite's COMMIT, a statement).
 */
const dir = temporaryDirectory('leaseq-sqlite-outcome-unknown-');

afterEach(() => {
  vi.restoreAllMocks();
});

/** An error as the disk gives it. */
function ioError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('SQLite: the disk failing at a commit, or before it', () => {
  it('a publish whose WAL sync fails after its commit may or may not have taken effect; calls after it were not run', async () => {
    const path = join(dir, 'sync.db');
    const engine = await openEngine(`sqlite:${path}`);
    let closed = false;
    try {
      const queue = await engine.queue('jobs');
      vi.spyOn(WalSync.prototype, 'sync').mockImplementationOnce(async function (this: WalSync) {
        throw new StorageUnavailableError(
          `the write-ahead log ${this.path} could not be synced to disk: EIO: i/o error, fdatasync`,
          { cause: ioError('EIO: i/o error, fdatasync', 'EIO') },
        );
      });
      const error = await queue.publish(1, { id: 'a' }).catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(StorageUnavailableError);
      expect((error as Error).message).toMatch(
        /could not be synced to disk: EIO.*may or may not have taken effect/,
      );
      expect(mayHaveTakenEffect(error)).toBe(true);
      // The engine takes no more calls; they were not run, and say so.
      const later = await queue.publish(2, { id: 'b' }).catch((failure: unknown) => failure);
      expect(later).toBeInstanceOf(StorageUnavailableError);
      expect((later as Error).message).toMatch(/this call was not run/);
      expect(mayHaveTakenEffect(later)).toBe(false);
      await engine.close();
      closed = true;
      // The commit was in the WAL: opened again, the publish is there.
      const again = await openEngine(`sqlite:${path}`);
      try {
        const reopened = await again.queue('jobs');
        expect((await reopened.stats(3)).ready).toBe(1);
      } finally {
        await again.close();
      }
    } finally {
      if (!closed) await engine.close();
    }
  });

  it('a publish whose COMMIT fails with an I/O error may or may not have taken effect', async () => {
    const path = join(dir, 'commit.db');
    const engine = await openEngine(`sqlite:${path}`);
    try {
      const queue = await engine.queue('jobs');
      // Written to the WAL, then failed (an fsync of SQLite's own, say): SQLite reports an error
      // for a commit that may be found again at the next open.
      const commit = SqliteConnection.prototype.commit;
      vi.spyOn(SqliteConnection.prototype, 'commit').mockImplementationOnce(async function (
        this: SqliteConnection,
      ) {
        await commit.call(this);
        throw ioError('disk I/O error', 'SQLITE_IOERR_FSYNC');
      });
      const error = await queue.publish(1, { id: 'a' }).catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(StorageUnavailableError);
      expect((error as Error).message).toMatch(
        /cannot be used: disk I\/O error.*may or may not have taken effect/,
      );
      expect(mayHaveTakenEffect(error)).toBe(true);
      expect((await queue.stats(2)).ready).toBe(1);
    } finally {
      await engine.close();
    }
  });

  it('a publish whose statement fails with an I/O error before its commit took no effect and says nothing of the kind', async () => {
    const path = join(dir, 'statement.db');
    const engine = await openEngine(`sqlite:${path}`);
    try {
      const queue = await engine.queue('jobs');
      vi.spyOn(SqliteConnection.prototype, 'runEach').mockImplementationOnce(async () => {
        throw ioError('disk I/O error', 'SQLITE_IOERR_WRITE');
      });
      const error = await queue.publish(1, { id: 'a' }).catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(StorageUnavailableError);
      expect((error as Error).message).not.toMatch(/may or may not/);
      expect(mayHaveTakenEffect(error)).toBe(false);
      expect((await queue.stats(2)).ready).toBe(0);
    } finally {
      await engine.close();
    }
  });
});
