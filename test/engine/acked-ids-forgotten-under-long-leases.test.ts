import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { postgresReachable, postgresUrl } from '../conformance/engines.js';
import { temporaryDirectory } from '../temporary-directory.js';

/**
 * R4: an acked id is remembered for the queue's dedupWindow, then forgotten by the queue's next
 * step, which comes by the end of the window at the latest. On PostgreSQL an ack of jobs in no
 * group is one statement (leaseq_ack), which remembered the ids but left the queue's next event
 * where it was: at the earliest lease deadline. With leases of an hour and a window of a second,
 * every id acked stayed in leaseq_acked for that hour, a row per job.
 */
const dir = temporaryDirectory('leaseq-acked-long-leases-');

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

/**
 * 500 jobs reserved under leases of an hour and acked one by one at 0..40, then one more at
 * 10,000 and at 20,000: the steps of those later calls forget what was acked before them.
 */
async function ackedUnderLongLeases(engine: Engine, name: string): Promise<void> {
  const queue = await engine.queue(name, { visibility: 3_600_000, dedupWindow: 1000 });
  for (let batch = 0; batch < 5; batch += 1) {
    const now = batch * 10;
    await queue.publishBatch(
      now,
      Array.from({ length: 100 }, (_, index) => ({ id: `id-${batch}-${index}` })),
    );
    const deliveries = await queue.reserve(now, { max: 100 });
    expect(deliveries).toHaveLength(100);
    for (const delivery of deliveries) expect(await queue.ack(now, delivery.token)).toBe(true);
  }
  expect(await remembered(engine, name)).toBe(500);
  // Within the window, an acked id is still a duplicate.
  expect((await queue.publish(40, { id: 'id-4-0' })).duplicate).toBe(true);
  for (const now of [10_000, 20_000]) {
    await queue.publish(now, { id: `late-${now}` });
    const [delivery] = await queue.reserve(now, { max: 1 });
    expect(await queue.ack(now, delivery?.token ?? 0)).toBe(true);
  }
  expect((await queue.publish(20_000, { id: 'late-20000' })).duplicate).toBe(true);
  expect((await queue.publish(20_000, { id: 'id-0-0' })).duplicate).toBe(false);
}

describe('R4 SQLite: ids acked under long leases are forgotten once their window ends', () => {
  it('acked ids do not stay in leaseq_acked until a lease runs out', async () => {
    const engine = await openEngine(`sqlite:${join(dir, 'long-leases.db')}`);
    try {
      await ackedUnderLongLeases(engine, 'long-leases');
      expect(await remembered(engine, 'long-leases')).toBeLessThanOrEqual(2);
    } finally {
      await engine.close();
    }
  });
});

describe.skipIf(!(await postgresReachable()))(
  'R4 PostgreSQL: ids acked in one statement under long leases are forgotten once their window ends',
  () => {
    it('acked ids do not stay in leaseq_acked until a lease runs out', async () => {
      const engine = await openEngine(postgresUrl());
      const name = `long-leases-${randomBytes(6).toString('hex')}`;
      try {
        await ackedUnderLongLeases(engine, name);
        expect(await remembered(engine, name)).toBeLessThanOrEqual(2);
        await engine.deleteQueue(name);
      } finally {
        await engine.close();
      }
    });
  },
);
