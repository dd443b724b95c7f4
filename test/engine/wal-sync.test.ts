import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StorageUnavailableError } from '../../src/core/index.js';
import { openEngine } from '../../src/engine/index.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { WalSync } from '../../src/engine/sqlite/wal-sync.js';
import { temporaryDirectory } from '../temporary-directory.js';

const dir = temporaryDirectory('leaseq-wal-sync-');

/** Whether `promise` settles within a few microtask turns, with no turn of the event loop. */
async function settlesWithoutTheLoop(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let turn = 0; turn < 5; turn++) await Promise.resolve();
  return settled;
}

describe.each([
  ['on the calling thread', false],
  ['on the thread pool', true],
])('WalSync %s: the WAL synced from outside SQLite', (_, onThreadPool) => {
  it('syncs the file, again and again on one descriptor', async () => {
    const path = join(dir, `a-${onThreadPool}.db-wal`);
    writeFileSync(path, 'frames');
    const wal = new WalSync(path, onThreadPool);
    await expect(wal.sync()).resolves.toBeUndefined();
    await expect(wal.sync()).resolves.toBeUndefined();
    wal.close();
  });

  it('keeps its descriptor: the file SQLite writes while the connection is open', async () => {
    const path = join(dir, `b-${onThreadPool}.db-wal`);
    writeFileSync(path, 'frames');
    const wal = new WalSync(path, onThreadPool);
    await wal.sync();
    // SQLite deletes the WAL only when the last connection closes, never under an open one;
    // the descriptor opened at the first sync stays valid whatever the path names later.
    rmSync(path);
    await expect(wal.sync()).resolves.toBeUndefined();
    wal.close();
    await expect(new WalSync(path, onThreadPool).sync()).rejects.toThrow(StorageUnavailableError);
  });

  it('refuses a missing WAL file with a typed error naming it', async () => {
    const wal = new WalSync(join(dir, 'missing.db-wal'), onThreadPool);
    await expect(wal.sync()).rejects.toThrow(/missing\.db-wal could not be synced/);
    await expect(wal.sync()).rejects.toThrow(StorageUnavailableError);
  });

  it(
    onThreadPool
      ? 'leaves the event loop free: the sync ends in a later turn of it'
      : 'blocks the caller until the WAL is on disk, as SQLite does',
    async () => {
      const path = join(dir, `c-${onThreadPool}.db-wal`);
      writeFileSync(path, 'frames');
      const wal = new WalSync(path, onThreadPool);
      // A sync on the pool is answered by the loop (a callback), never within microtasks.
      expect(await settlesWithoutTheLoop(wal.sync())).toBe(!onThreadPool);
      await wal.sync();
      wal.close();
    },
  );
});

describe('SQLite fsync engine with syncOnThreadPool', () => {
  afterEach(() => vi.restoreAllMocks());

  it.each([
    [false, true],
    [true, false],
  ])(
    'syncOnThreadPool %s: the sync before a publish is answered settles without the loop: %s',
    async (syncOnThreadPool, blocking) => {
      const seen: boolean[] = [];
      const syncCommitted = SqliteConnection.prototype.syncCommitted;
      vi.spyOn(SqliteConnection.prototype, 'syncCommitted').mockImplementation(async function (
        this: SqliteConnection,
      ) {
        const sync = syncCommitted.call(this);
        seen.push(await settlesWithoutTheLoop(sync));
        return sync;
      });
      const engine = await openEngine(`sqlite:${join(dir, `engine-${syncOnThreadPool}.db`)}`, {
        syncOnThreadPool,
      });
      try {
        const q = await engine.queue('jobs');
        await q.publish(0, { id: 'a' });
        const [delivery] = await q.reserve(1, { max: 1 });
        expect(await q.ack(2, delivery?.token ?? -1)).toBe(true);
        expect(seen.length).toBeGreaterThanOrEqual(2);
        expect(new Set(seen)).toEqual(new Set([blocking]));
      } finally {
        await engine.close();
      }
    },
  );
});
