import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

  it('keeps its descriptor: the file SQLite writes while the connection is open', () => {
    const path = join(dir, 'b.db-wal');
    writeFileSync(path, 'frames');
    const wal = new WalSync(path);
    wal.sync();
    // SQLite deletes the WAL only when the last connection closes, never under an open one;
    // the descriptor opened at the first sync stays valid whatever the path names later.
    rmSync(path);
    expect(() => wal.sync()).not.toThrow();
    wal.close();
    expect(() => new WalSync(path).sync()).toThrow(StorageUnavailableError);
  });

  it('refuses a missing WAL file with a typed error naming it', () => {
    const wal = new WalSync(join(dir, 'missing.db-wal'));
    expect(() => wal.sync()).toThrow(/missing\.db-wal could not be synced/);
    expect(() => wal.sync()).toThrow(StorageUnavailableError);
  });
});
