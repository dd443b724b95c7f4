import { vi } from 'vitest';
import type { CommitKind } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';

/**
 * The kind of every SQLite transaction begun from now on, in order (R21: what its commit waits
 * for), and `sync` for every sync of the WAL made after commits (R32: `laterSync`). The spy is
 * undone by `vi.restoreAllMocks()`.
 */
export function recordCommitKinds(): (CommitKind | 'sync')[] {
  const kinds: (CommitKind | 'sync')[] = [];
  const begin = SqliteConnection.prototype.begin;
  vi.spyOn(SqliteConnection.prototype, 'begin').mockImplementation(function (
    this: SqliteConnection,
    kind?: CommitKind,
  ) {
    kinds.push(kind ?? 'durable');
    return begin.call(this, kind);
  });
  // Durable too: committed without a sync, then synced before its callers are answered (R32).
  const beginSyncedLater = SqliteConnection.prototype.beginSyncedLater;
  vi.spyOn(SqliteConnection.prototype, 'beginSyncedLater').mockImplementation(function (
    this: SqliteConnection,
  ) {
    kinds.push('durable');
    return beginSyncedLater.call(this);
  });
  const syncCommitted = SqliteConnection.prototype.syncCommitted;
  vi.spyOn(SqliteConnection.prototype, 'syncCommitted').mockImplementation(function (
    this: SqliteConnection,
  ) {
    kinds.push('sync');
    return syncCommitted.call(this);
  });
  return kinds;
}

/**
 * Holds every sync that a SQLite engine makes after a commit (R32: `laterSync`) until the
 * returned release is called; `onSync` hears when each starts. Undone by `vi.restoreAllMocks()`.
 */
export function holdLaterSyncs(onSync: () => void = () => {}): () => void {
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const sync = SqliteConnection.prototype.syncCommitted;
  vi.spyOn(SqliteConnection.prototype, 'syncCommitted').mockImplementation(async function (
    this: SqliteConnection,
  ) {
    onSync();
    await held;
    return sync.call(this);
  });
  return release;
}
