import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { build } from '../../src/core/index.js';
import { openEngine } from '../../src/engine/index.js';
import { TOKEN_BLOCK } from '../../src/engine/sql/token-block.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { holdLaterSyncs, recordCommitKinds } from './commit-kind-spy.js';

/**
 * R21 on SQLite: which commits wait for a sync. Publishes, acks and every other change of a
 * job commit durably: their callers are answered after a sync of the WAL that follows the
 * commit (`sync` below). Reservations, extensions, heartbeats and reads only move leases and
 * are answered at their commit, a synced mark fencing their tokens.
 */
const dir = temporaryDirectory('leaseq-commit-kinds-');
afterEach(() => {
  vi.restoreAllMocks();
});

let files = 0;

/** An fsync engine whose transactions report the kind of commit they began. */
async function recordedEngine() {
  const kinds = recordCommitKinds();
  files += 1;
  const engine = await openEngine(`sqlite:${join(dir, `kinds-${files}.db`)}`);
  const queue = await engine.queue('jobs', { visibility: 1000 });
  /** The kinds of the commits `action` made. */
  const during = async (action: () => Promise<unknown>) => {
    kinds.length = 0;
    await action();
    return [...kinds];
  };
  return { engine, queue, during };
}

describe('R21 SQLite fsync: what each commit waits for', () => {
  it('publishes, acks, nacks and session changes are durable; reserve, extend, heartbeat and reads are not', async () => {
    const { engine, queue, during } = await recordedEngine();
    expect(
      await during(() => queue.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }])),
    ).toEqual(['durable', 'sync']);
    // The first token of a block: its reservation raises the mark, answered after a sync.
    expect(await during(() => queue.reserve(1))).toEqual(['lease', 'sync']);
    expect(await during(() => queue.reserve(1))).toEqual(['lease']);
    expect(await during(() => queue.extend(2, 2, 500))).toEqual(['lease']);
    expect(await during(() => queue.ack(2, 1))).toEqual(['durable', 'sync']);
    expect(await during(() => queue.nack(2, 2))).toEqual(['durable', 'sync']);
    const session = await queue.openSession(2);
    expect(await during(() => queue.heartbeat(3, session))).toEqual(['lease']);
    expect(await during(() => queue.stats(3))).toEqual(['lease']);
    expect(await during(() => queue.inspect())).toEqual(['lease']);
    expect(await during(() => queue.closeSession(3, session))).toEqual(['durable', 'sync']);
    expect(await during(() => queue.execute(4, [build.reserve({}), build.extend(3, 100)]))).toEqual(
      ['lease'],
    );
    expect(await during(() => queue.execute(4, [build.reserve({}), build.ack(3)]))).toEqual([
      'durable',
      'sync',
    ]);
    expect(await during(() => queue.redrive(4))).toEqual(['durable', 'sync']);
    await engine.close();
  });

  it('concurrent reserves of one tick share one lease commit; acks behind them commit apart', async () => {
    const { engine, queue, during } = await recordedEngine();
    await queue.publishBatch(
      0,
      Array.from({ length: 8 }, (_, index) => ({ id: `j${index}` })),
    );
    await queue.reserve(0); // the first block's mark
    const kinds = await during(() =>
      Promise.all([queue.reserve(1), queue.reserve(1), queue.reserve(1), queue.ack(1, 1)]),
    );
    // The leading lease-only calls are answered without waiting for the ack's sync.
    expect(kinds).toEqual(['lease', 'durable', 'sync']);
    await engine.close();
  });

  it('the mark is raised once per block of tokens, in the same commit, answered after a sync', async () => {
    const { engine, queue, during } = await recordedEngine();
    await queue.publishBatch(
      0,
      Array.from({ length: TOKEN_BLOCK + 2 }, (_, index) => ({ id: `j${index}` })),
    );
    expect(await during(() => queue.reserve(1, { max: TOKEN_BLOCK }))).toEqual(['lease', 'sync']);
    // Token TOKEN_BLOCK + 1 is within the mark raised to the first token + TOKEN_BLOCK.
    expect(await during(() => queue.reserve(1))).toEqual(['lease']);
    // Past the mark inside a durable batch: raised there, one sync for both.
    expect(
      await during(() => queue.execute(2, [build.publish({ id: 'x' }), build.reserve({ max: 2 })])),
    ).toEqual(['durable', 'sync']);
    expect(await during(() => queue.reserve(2))).toEqual(['lease']);
    await engine.close();
  });

  it("durability 'os' commits everything without waiting for a sync, as before", async () => {
    files += 1;
    const path = join(dir, `os-${files}.db`);
    const engine = await openEngine(`sqlite:${path}`, { durability: 'os' });
    const queue = await engine.queue('jobs');
    await queue.publish(0, { id: 'a' });
    await queue.reserve(0);
    await engine.close();
    const db = new Database(path, { readonly: true });
    // No mark is kept where nothing is synced: it would fence nothing.
    expect(db.prepare('SELECT token_high_water AS high FROM leaseq_queues').get()).toEqual({
      high: 0,
    });
    db.close();
  });

  it('the connection sets the sync level before BEGIN, where SQLite allows it', async () => {
    const db = new Database(join(dir, 'levels.db'));
    db.pragma('journal_mode = WAL');
    const full = new SqliteConnection(db, 'FULL');
    const level = () => db.pragma('synchronous', { simple: true });
    await full.begin('lease');
    expect(level()).toBe(1);
    await full.commit();
    await full.begin('durable');
    expect(level()).toBe(2);
    await full.commit();
    const os = new SqliteConnection(db, 'NORMAL');
    await os.begin('durable');
    expect(level()).toBe(1);
    await os.commit();
    db.close();
  });

  it('offers a sync after commit only where durable commits sync and there is a WAL', async () => {
    const wal = new Database(join(dir, 'later-wal.db'));
    wal.pragma('journal_mode = WAL');
    expect(new SqliteConnection(wal, 'FULL').laterSync).toBeDefined();
    const os = new SqliteConnection(wal, 'NORMAL');
    expect(os.laterSync).toBeUndefined();
    // Never a silent no-op where a sync was asked for and none can be made.
    await expect(os.syncCommitted()).rejects.toThrow(/nothing to sync after/);
    wal.close();
    const rollbackJournal = new Database(join(dir, 'later-delete.db'));
    const journalled = new SqliteConnection(rollbackJournal, 'FULL');
    expect(journalled.laterSync).toBeUndefined();
    // Without a later sync there is no token fence: a reservation's commit syncs itself.
    await journalled.begin('lease');
    expect(rollbackJournal.pragma('synchronous', { simple: true })).toBe(2);
    await journalled.commit();
    rollbackJournal.close();
  });
});

describe('R32 SQLite fsync: a waiting receiver is answered before its publish is synced', () => {
  const gateLaterSyncs = (log: string[]) => holdLaterSyncs(() => log.push('sync'));

  async function engineWithMark() {
    files += 1;
    const path = join(dir, `handoff-${files}.db`);
    const engine = await openEngine(`sqlite:${path}`);
    const queue = await engine.queue('jobs', { visibility: 1000 });
    // The first reservation raises the token mark (a durable commit of its own).
    await queue.publish(0, { id: 'first' });
    const [first] = await queue.reserve(0);
    await queue.ack(0, first?.token ?? 0);
    return { engine, queue, path };
  }

  it('the receiver gets the job before the sync; the publish returns after it', async () => {
    const { engine, queue, path } = await engineWithMark();
    const log: string[] = [];
    const release = gateLaterSyncs(log);
    const stop = new AbortController();
    const received = queue.reserveOnReady?.(1, build.reserve({}), stop.signal).deliveries;
    let published = false;
    const publish = queue.publish(1, { id: 'a', payload: 'x' }).then((result) => {
      published = true;
      return result;
    });
    const [delivery] = (await received) ?? [];
    expect(delivery?.id).toBe('a');
    // Answered before the sync even began; the sync then runs while the publish waits.
    expect(log).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(log).toEqual(['sync']);
    expect(published).toBe(false);
    // Seen by another connection before the sync: committed, not yet promised to the publisher.
    const reader = new Database(path, { readonly: true });
    expect(reader.prepare("SELECT state FROM leaseq_jobs WHERE id = 'a'").get()).toEqual({
      state: 'active',
    });
    reader.close();
    release();
    expect(await publish).toEqual({ id: 'a', duplicate: false });
    expect(await queue.ack(2, delivery?.token ?? 0)).toBe(true);
    await engine.close();
  });

  it('a token above the synced mark goes out only after the sync', async () => {
    files += 1;
    const engine = await openEngine(`sqlite:${join(dir, `handoff-${files}.db`)}`);
    const queue = await engine.queue('jobs', { visibility: 1000 });
    const log: string[] = [];
    const release = gateLaterSyncs(log);
    let delivered = false;
    const received = queue.reserveOnReady?.(
      0,
      build.reserve({}),
      new AbortController().signal,
    ).deliveries;
    void received?.then(() => {
      delivered = true;
    });
    const publish = queue.publish(0, { id: 'a' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Token 1 raises the mark in the publish's own transaction: held for the sync.
    expect(log).toEqual(['sync']);
    expect(delivered).toBe(false);
    release();
    await publish;
    expect((await received)?.map((delivery) => delivery.token)).toEqual([1]);
    await engine.close();
  });

  it('with no receiver waiting, a publish is answered after one sync of its commit', async () => {
    const { engine, queue } = await engineWithMark();
    const kinds = recordCommitKinds();
    await queue.publish(1, { id: 'a' });
    expect(kinds).toEqual(['durable', 'sync']);
    await engine.close();
  });
});
