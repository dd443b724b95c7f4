import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { postgresReachable, postgresUrl } from '../conformance/engines.js';
import { temporaryDirectory } from '../temporary-directory.js';

/**
 * R4: an acked id is remembered for the queue's dedupWindow, then forgotten. On the SQL engines
 * the rows of leaseq_acked were deleted only by a step that a lease, delay, expiry or session
 * brought due: a queue received with `ack: 'auto'` has no leases, so its remembered ids were
 * never deleted, and the table grew by one row per job for as long as the queue ran.
 */
const dir = temporaryDirectory('leaseq-remembered-forgotten-');

async function remembered(engine: Engine, queue: string): Promise<number> {
  const transaction = engine.transaction?.bind(engine);
  if (transaction === undefined) throw new Error('a SQL engine has transactions');
  const [row] = await transaction((tx) =>
    tx.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM leaseq_acked WHERE queue = ?', [
      queue,
    ]),
  );
  return Number(row?.n);
}

/** 500 jobs received at once (auto-ack) at 0..40, then one more at 10,000 and at 20,000. */
async function autoAckedLongAgo(engine: Engine, name: string): Promise<void> {
  const queue = await engine.queue(name, { visibility: 30_000, dedupWindow: 1000 });
  for (let batch = 0; batch < 5; batch += 1) {
    const now = batch * 10;
    await queue.publishBatch(
      now,
      Array.from({ length: 100 }, (_, index) => ({ id: `id-${batch}-${index}` })),
    );
    expect(await queue.reserve(now, { max: 100, ack: 'auto' })).toHaveLength(100);
  }
  expect(await remembered(engine, name)).toBe(500);
  for (const now of [10_000, 20_000]) {
    await queue.publish(now, { id: `late-${now}` });
    expect(await queue.reserve(now, { max: 1, ack: 'auto' })).toHaveLength(1);
  }
  // Still a duplicate within its window; the others were forgotten long ago.
  expect((await queue.publish(20_000, { id: 'late-20000' })).duplicate).toBe(true);
  expect((await queue.publish(20_000, { id: 'id-0-0' })).duplicate).toBe(false);
}

describe('R4 SQLite: acked ids of a queue without leases are forgotten once their window ends', () => {
  it('auto-acked ids do not stay in leaseq_acked after their dedupWindow', async () => {
    const engine = await openEngine(`sqlite:${join(dir, 'forgotten.db')}`);
    try {
      await autoAckedLongAgo(engine, 'auto');
      expect(await remembered(engine, 'auto')).toBeLessThanOrEqual(2);
    } finally {
      await engine.close();
    }
  });
});

describe.skipIf(!(await postgresReachable()))(
  'R4 PostgreSQL: acked ids of a queue without leases are forgotten once their window ends',
  () => {
    it('auto-acked ids do not stay in leaseq_acked after their dedupWindow', async () => {
      const engine = await openEngine(postgresUrl());
      const name = `forgotten-${randomBytes(6).toString('hex')}`;
      try {
        await autoAckedLongAgo(engine, name);
        expect(await remembered(engine, name)).toBeLessThanOrEqual(2);
        await engine.deleteQueue(name);
      } finally {
        await engine.close();
      }
    });
  },
);
