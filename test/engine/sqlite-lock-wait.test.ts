import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { type Broker, open, StorageLockedError } from '../../src/index.js';
import { temporaryDirectory } from '../temporary-directory.js';

// Another process (here another connection) holds the SQLite file's write lock. leaseq waits
// for it on timers, not inside SQLite: the event loop goes on (timers fire, a server answers
// its other connections), and a call fails with StorageLockedError after about busyTimeoutMs,
// however many calls wait together, having changed nothing.
const dir = temporaryDirectory('leaseq-lock-wait-');

/** A file with a queue `jobs` holding one ready job `before`. */
async function fileWithOneJob(name: string, busyTimeoutMs: number) {
  const path = join(dir, `${name}.db`);
  const broker = await open(`sqlite:${path}`, { busyTimeoutMs });
  const queue = await broker.queue('jobs', { visibility: 60_000 });
  await queue.publish({ id: 'before', payload: { n: 1 } });
  return { path, broker, queue };
}

/** Another connection holds the write lock of `path` until `release` (BEGIN IMMEDIATE). */
function holdWriteLock(path: string) {
  const holder = new Database(path);
  holder.exec('BEGIN IMMEDIATE');
  return () => {
    if (!holder.open) return;
    holder.exec('ROLLBACK');
    holder.close();
  };
}

/** Counts the ticks of a 10 ms timer: about none while the event loop is blocked. */
function tickCounter() {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 10);
  return {
    stop: () => {
      clearInterval(timer);
      return ticks;
    },
  };
}

type Settled = { ok: true; value: unknown; ms: number } | { ok: false; error: unknown; ms: number };

/** How `call` settled, and after how many ms since it was made. */
async function timed(call: () => Promise<unknown>): Promise<Settled> {
  const start = performance.now();
  try {
    const value = await call();
    return { ok: true, value, ms: performance.now() - start };
  } catch (error) {
    return { ok: false, error, ms: performance.now() - start };
  }
}

function expectLockedWithin(settled: Settled, timeoutMs: number): void {
  expect(settled.ok).toBe(false);
  const { error } = settled as { error: Error };
  expect(error).toBeInstanceOf(StorageLockedError);
  expect(error.message).toContain('busyTimeoutMs');
  // At least the timeout (a timer may fire a little before its ms, as performance.now counts),
  // and not a multiple of it.
  expect(settled.ms).toBeGreaterThanOrEqual(timeoutMs - 5);
  expect(settled.ms).toBeLessThan(2 * timeoutMs);
}

async function closeAll(broker: Broker, release: () => void): Promise<void> {
  release();
  await broker.close();
}

describe('SQLite: waiting for another process’s write lock', () => {
  const TIMEOUT = 300;

  it('a publish fails with StorageLockedError after busyTimeoutMs, the event loop going on', async () => {
    const { path, broker, queue } = await fileWithOneJob('publish-refused', TIMEOUT);
    const release = holdWriteLock(path);
    try {
      const ticks = tickCounter();
      const settled = await timed(() => queue.publish({ id: 'during' }));
      const counted = ticks.stop();
      expectLockedWithin(settled, TIMEOUT);
      // 30 ticks in 300 ms; a loop blocked in SQLite's busy wait counts about none.
      expect(counted).toBeGreaterThanOrEqual(10);
    } finally {
      await closeAll(broker, release);
    }
  });

  it('calls made together (publish, receive, stats, ack) all fail within that bound', async () => {
    const { path, broker, queue } = await fileWithOneJob('together-refused', TIMEOUT);
    const release = holdWriteLock(path);
    try {
      const ticks = tickCounter();
      // Receive first: a lease-only call commits in a batch of its own, ahead of the others.
      const all = await Promise.all([
        timed(() => queue.receive({ max: 1 })),
        timed(() => queue.publish({ id: 'during-1' })),
        timed(() => queue.publishBatch([{ id: 'during-2' }, { id: 'during-3' }])),
        timed(() => queue.stats()),
        timed(() => queue.ack(12345)),
        timed(() => broker.listQueues()),
      ]);
      const counted = ticks.stop();
      for (const settled of all) expectLockedWithin(settled, TIMEOUT);
      expect(counted).toBeGreaterThanOrEqual(10);
    } finally {
      await closeAll(broker, release);
    }
  });

  it('a call made while another waits fails with it: no call waits longer than the timeout', async () => {
    const { path, broker, queue } = await fileWithOneJob('late-refused', TIMEOUT);
    const release = holdWriteLock(path);
    try {
      const start = performance.now();
      const first = timed(() => queue.publish({ id: 'first' }));
      await new Promise((resolve) => setTimeout(resolve, TIMEOUT / 2));
      // Made while the first call waits (a blocked event loop would make it only after).
      expect(performance.now() - start).toBeLessThan(TIMEOUT * 0.8);
      const late = await timed(() => queue.publish({ id: 'late' }));
      const firstSettled = await first;
      expectLockedWithin(firstSettled, TIMEOUT);
      // The storage was locked for the whole timeout: the late call fails with the first, after
      // about half the timeout (it would have waited a whole one more in a batch of its own).
      expect(late.ok).toBe(false);
      expect((late as { error: unknown }).error).toBeInstanceOf(StorageLockedError);
      expect(late.ms).toBeLessThan(TIMEOUT * 0.8);
    } finally {
      await closeAll(broker, release);
    }
  });

  it('a refused call changed nothing: the file is as before once the lock is gone', async () => {
    const { path, broker, queue } = await fileWithOneJob('nothing-changed', TIMEOUT);
    const before = await queue.stats();
    const release = holdWriteLock(path);
    try {
      const refused = await Promise.all([
        timed(() => queue.publish({ id: 'during' })),
        timed(() => queue.receive({ max: 1 })),
        timed(() => broker.queue('other')),
      ]);
      for (const settled of refused) expectLockedWithin(settled, TIMEOUT);
      release();
      const after = await queue.stats();
      expect({ ...after, queueTime: 0, oldestReadyAge: 0 }).toEqual({
        ...before,
        queueTime: 0,
        oldestReadyAge: 0,
      });
      expect(await queue.job('during')).toBeUndefined();
      expect(await queue.job('before')).toMatchObject({ state: 'ready', deliveryCount: 0 });
      expect((await broker.listQueues()).map(({ name }) => name)).toEqual(['jobs']);
      // And the file works: the job is handed out once, with the next token.
      const [delivery] = await queue.receive({ max: 1 });
      expect(delivery?.id).toBe('before');
    } finally {
      await closeAll(broker, release);
    }
  });

  it('a lock released before busyTimeoutMs: the waiting calls succeed soon after', async () => {
    const { path, broker, queue } = await fileWithOneJob('released', 2000);
    const release = holdWriteLock(path);
    let releasedAt = Number.POSITIVE_INFINITY;
    const start = performance.now();
    setTimeout(() => {
      release();
      releasedAt = performance.now() - start;
    }, 150);
    try {
      const all = await Promise.all([
        timed(() => queue.receive({ max: 1 })),
        timed(() => queue.publish({ id: 'during' })),
        timed(() => queue.stats()),
      ]);
      for (const settled of all) {
        expect(settled.ok).toBe(true);
        // Well within the 2000 ms timeout: at most a pause of the wait (≤ 60 ms) and the calls.
        expect(settled.ms).toBeGreaterThanOrEqual(releasedAt - 5);
        expect(settled.ms).toBeLessThan(releasedAt + 150);
      }
      const [received] = all;
      expect((received as { value: { id: string }[] }).value.map(({ id }) => id)).toEqual([
        'before',
      ]);
      expect(await queue.job('during')).toMatchObject({ state: 'ready' });
    } finally {
      await closeAll(broker, release);
    }
  });

  it('opening a locked file waits on timers too, and fails after busyTimeoutMs', async () => {
    const { path, broker } = await fileWithOneJob('open-refused', TIMEOUT);
    await broker.close();
    const release = holdWriteLock(path);
    try {
      const ticks = tickCounter();
      const settled = await timed(() => open(`sqlite:${path}`, { busyTimeoutMs: TIMEOUT }));
      const counted = ticks.stop();
      expectLockedWithin(settled, TIMEOUT);
      expect(counted).toBeGreaterThanOrEqual(10);
    } finally {
      release();
    }
  });
});
