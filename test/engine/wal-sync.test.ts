import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { StorageUnavailableError } from '../../src/core/index.js';
import { WalSync } from '../../src/engine/sqlite/wal-sync.js';

const dir = mkdtempSync(join(tmpdir(), 'leaseq-wal-sync-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('WalSync: the WAL synced from outside SQLite', () => {
  it('syncs the file, again and again on one descriptor', () => {
    const path = join(dir, 'a.db-wal');
    writeFileSync(path, 'frames');
    const wal = new WalSync(path);
    expect(() => wal.sync()).not.toThrow();
    expect(() => wal.sync()).not.toThrow();
    wal.close();
  });

  it('looks the path up at every sync: a replaced file is synced, a removed one is an error', () => {
    const path = join(dir, 'b.db-wal');
    writeFileSync(path, 'old');
    const wal = new WalSync(path);
    wal.sync();
    // Replaced (as when the last connection deleted it and a new one made it again).
    writeFileSync(join(dir, 'b.new'), 'new');
    renameSync(join(dir, 'b.new'), path);
    expect(() => wal.sync()).not.toThrow();
    // Gone: a typed error, although the descriptor held since the first sync still works.
    rmSync(path);
    let failure: unknown;
    try {
      wal.sync();
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(StorageUnavailableError);
    expect((failure as StorageUnavailableError).code).toBe('STORAGE_UNAVAILABLE');
    expect((failure as Error).message).toContain(path);
    wal.close();
  });

  it('refuses a missing WAL file with a typed error naming it', () => {
    const wal = new WalSync(join(dir, 'missing.db-wal'));
    expect(() => wal.sync()).toThrow(/missing\.db-wal could not be synced/);
    expect(() => wal.sync()).toThrow(StorageUnavailableError);
  });
});
