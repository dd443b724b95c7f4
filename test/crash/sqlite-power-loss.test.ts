import { copyFileSync, mkdtempSync, statSync, truncateSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { build } from '../../src/core/index.js';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { TOKEN_BLOCK } from '../../src/engine/sql/token-block.js';
import { holdLaterSyncs } from '../engine/commit-kind-spy.js';

/**
 * R21 across a simulated power loss. A commit that only moves leases does not wait for a sync:
 * its WAL frames may never reach the disk. The disk after a power loss is the database file
 * and the WAL up to its last synced commit, which is what the copy here keeps (the frames of
 * later, unsynced commits cut off, the shared-memory index left behind as a reboot does).
 */
const dirs: string[] = [];
const engines: Engine[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(engines.splice(0).map((engine) => engine.close()));
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** The database file's size after open: a checkpoint would change it. */
const databaseBytesAtStart = new Map<string, number>();

async function fsyncEngine(path: string): Promise<Engine> {
  const engine = await openEngine(`sqlite:${path}`, { durability: 'fsync' });
  engines.push(engine);
  databaseBytesAtStart.set(path, statSync(path).size);
  return engine;
}

/** Copies the database as a power loss would leave it: the WAL cut at `syncedWalBytes`. */
function powerLossCopy(path: string, syncedWalBytes: number, copy: string): void {
  // The cut is only meaningful while the WAL was appended to since the start of the test: a
  // checkpoint that restarted it would write over its first frames.
  expect(statSync(path).size).toBe(databaseBytesAtStart.get(path));
  copyFileSync(path, copy);
  copyFileSync(`${path}-wal`, `${copy}-wal`);
  truncateSync(`${copy}-wal`, syncedWalBytes);
}

/** An fsync engine on a file of a fresh folder, and its queue `jobs`. */
async function freshQueue() {
  const dir = mkdtempSync(join(tmpdir(), 'leaseq-power-loss-'));
  dirs.push(dir);
  const path = join(dir, 'before.db');
  const engine = await fsyncEngine(path);
  const q = await engine.queue('jobs', { visibility: 60_000 });
  return { dir, path, q };
}

describe('SQLite fsync: a power loss after commits made without sync', () => {
  it('R21 R7 a lost reservation comes back ready with a fresh token; its old token is refused', async () => {
    const { dir, path, q } = await freshQueue();
    await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
    const [first] = await q.reserve(1); // the first token: its block's mark is synced before it returns
    expect(first?.token).toBe(1);
    // Every byte of the WAL so far is on disk: the ack below waits for its sync.
    expect(await q.ack(2, 1)).toBe(true);
    const synced = statSync(`${path}-wal`).size;

    const [lost] = await q.reserve(3); // within the block: committed without a sync
    expect(lost).toMatchObject({ id: 'b', token: 2 });
    expect(await q.extend(4, 2, 90_000)).toBe(90_004);
    const grown = statSync(`${path}-wal`).size;
    // The lease-only commits did write frames: the cut below really discards them.
    expect(grown).toBeGreaterThan(synced);

    const after = join(dir, 'after.db');
    powerLossCopy(path, synced, after);
    const restarted = await fsyncEngine(after);
    const again = await restarted.queue('jobs');
    // The acked job stays acked; the lost reservation is as if its lease had run out.
    expect(await again.inspect()).toEqual({
      queueTime: 2,
      ready: ['b'],
      delayed: [],
      active: [],
      dead: [],
    });
    const [fresh] = await again.reserve(5);
    expect(fresh).toMatchObject({ id: 'b', deliveryCount: 1 });
    // Above every token handed out before the power loss: the old owner is fenced off.
    expect(fresh?.token).toBeGreaterThan(2);
    expect(await again.ack(6, 2)).toBe(false);
    expect(await again.extend(6, 2, 1000)).toBeNull();
    expect(await again.ack(6, fresh?.token as number)).toBe(true);
    expect((await again.stats(6)).staleAcks).toBe(1);
  });

  it('R21 R7 a file opened with durability os after a power loss still fences off the tokens handed out before', async () => {
    const { dir, path, q } = await freshQueue();
    await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
    const [first] = await q.reserve(1);
    expect(await q.ack(2, first?.token as number)).toBe(true);
    const synced = statSync(`${path}-wal`).size;
    const [lost] = await q.reserve(3); // committed without a sync
    expect(lost).toMatchObject({ id: 'b', token: 2 });

    const after = join(dir, 'after.db');
    powerLossCopy(path, synced, after);
    const restarted = await openEngine(`sqlite:${after}`, { durability: 'os' });
    engines.push(restarted);
    const again = await restarted.queue('jobs');
    const [fresh] = await again.reserve(5);
    expect(fresh).toMatchObject({ id: 'b', deliveryCount: 1 });
    expect(fresh?.token).toBeGreaterThan(2);
    // The holder of token 2 from before the power loss cannot complete the new delivery.
    expect(await again.ack(6, 2)).toBe(false);
    expect(await again.ack(6, fresh?.token as number)).toBe(true);
  });

  it('R21 R6 tokens after a power loss start above every token handed out before, across blocks', async () => {
    const { dir, path, q } = await freshQueue();
    const count = 2.5 * TOKEN_BLOCK;
    await q.publishBatch(
      0,
      Array.from({ length: count }, (_, index) => ({ id: `j${index}` })),
    );
    // The last synced commit: the publish, then each raise of the mark (a synced commit).
    let synced = statSync(`${path}-wal`).size;
    const reader = new Database(path, { readonly: true });
    const mark = reader.prepare('SELECT token_high_water AS high FROM leaseq_queues');
    let high = 0;
    let largest = 0;
    for (let now = 1; largest < count; now++) {
      for (const delivery of await q.reserve(now, { max: TOKEN_BLOCK / 10 })) {
        largest = Math.max(largest, delivery.token);
      }
      const stored = (mark.get() as { high: number }).high;
      if (stored !== high) synced = statSync(`${path}-wal`).size;
      high = stored;
    }
    reader.close();
    expect(largest).toBe(count);

    const after = join(dir, 'after.db');
    powerLossCopy(path, synced, after);
    const restarted = await fsyncEngine(after);
    const again = await restarted.queue('jobs');
    const view = await again.inspect();
    const survived = Math.max(...view.active.map((delivery) => delivery.token));
    // Some reservations were lost with the cut, their tokens with them.
    expect(survived).toBeLessThan(largest);
    expect(view.ready).toHaveLength(count - survived);
    const fresh = await again.reserve(100, { max: 10 });
    expect(fresh).toHaveLength(10);
    for (const delivery of fresh) expect(delivery.token).toBeGreaterThan(largest);
  });

  it('R32 R21 a job handed over before its publish was synced is lost with the publish, its token never reused', async () => {
    const { dir, path, q } = await freshQueue();
    await q.publish(0, { id: 'warm-up' });
    const [warm] = await q.reserve(0); // token 1: its block's mark synced
    expect(await q.ack(0, warm?.token as number)).toBe(true);
    const synced = statSync(`${path}-wal`).size;

    // The sync after the publish's commit is held: the disk has nothing of it yet.
    const releaseSync = holdLaterSyncs();
    const received = q.reserveOnReady?.(
      1,
      build.reserve({}),
      new AbortController().signal,
    ).deliveries;
    let returned = false;
    const publish = q.publish(1, { id: 'a' }).then(() => {
      returned = true;
    });
    const [handed] = (await received) ?? [];
    expect(handed).toMatchObject({ id: 'a', token: 2 });
    expect(returned).toBe(false);
    expect(statSync(`${path}-wal`).size).toBeGreaterThan(synced);

    // Power lost now: the publish, which never returned, is gone, and the delivery with it.
    const lost = join(dir, 'lost.db');
    powerLossCopy(path, synced, lost);

    // Power kept: once the publish returned, the disk has it, handed over and all.
    releaseSync();
    await publish;
    const kept = join(dir, 'kept.db');
    powerLossCopy(path, statSync(`${path}-wal`).size, kept);

    const restarted = await fsyncEngine(lost);
    const again = await restarted.queue('jobs');
    expect(await again.job('a')).toBeUndefined();
    // The publisher, unanswered, sends it again: a fresh delivery, above the token handed out.
    await again.publish(2, { id: 'a' });
    const [fresh] = await again.reserve(2);
    expect(fresh?.id).toBe('a');
    expect(fresh?.token).toBeGreaterThan(2);
    expect(await again.ack(3, 2)).toBe(false);

    const survived = await (await fsyncEngine(kept)).queue('jobs');
    expect((await survived.inspect()).active).toMatchObject([{ id: 'a', token: 2 }]);
  });
});
