import { join } from 'node:path';
import { expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { build } from '../../src/core/index.js';
import { POSTGRES_DIALECT } from '../../src/engine/postgres/postgres-engine.js';
import { BatchContext } from '../../src/engine/sql/executor.js';
import { Handoffs } from '../../src/engine/sql/handoffs.js';
import type { ReserveArgs } from '../../src/engine/sql/queue-ops.js';
import { QueueOps } from '../../src/engine/sql/queue-ops.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { open } from '../../src/index.js';
import { temporaryDirectory } from '../temporary-directory.js';

/**
 * R21, R22: a job received at most once is removed as it is handed out, a change of the job
 * that is on disk before the receive returns, as an ack's is. A receive that waits can be served
 * by a transaction that only moves leases (one that ends a lease that ran out): such a
 * transaction's commit need not reach the disk, but one that hands a job out at most once must,
 * before its answer, or a power loss would bring the job back to be delivered again.
 */
const directory = temporaryDirectory('leaseq-auto-ack-handoff-');

it('R21 a waiting receive at most once on SQLite (fsync) is answered only once the removal of its job is synced', async () => {
  const clock = new ManualClock(1_000_000);
  const broker = await open(`sqlite:${join(directory, 'q.db')}`, { clock });
  try {
    const queue = await broker.queue('q');
    await queue.publish({ id: 'a' });
    // In flight on a lease that runs out at +1000; the receive at most once parks meanwhile.
    expect(await queue.receive({ visibility: 1000 })).toHaveLength(1);
    const events: string[] = [];
    const sync = SqliteConnection.prototype.syncCommitted;
    vi.spyOn(SqliteConnection.prototype, 'syncCommitted').mockImplementation(async function (
      this: SqliteConnection,
    ) {
      await sync.call(this);
      events.push('synced');
    });
    const reserve = QueueOps.prototype.reserve;
    vi.spyOn(QueueOps.prototype, 'reserve').mockImplementation(async function (
      this: QueueOps,
      now: number,
      args: ReserveArgs,
    ) {
      const deliveries = await reserve.call(this, now, args);
      if (args.ack === 'auto' && deliveries.length > 0) events.push('handed out');
      return deliveries;
    });
    try {
      const waiting = queue.receive({ ack: 'auto', wait: 5000 });
      await vi.waitFor(() => expect(clock.waiting).toBeGreaterThan(0));
      // The lease runs out: the transaction that ends it hands the job to the parked receive.
      clock.set(1_001_000);
      expect((await waiting).map((delivery) => delivery.id)).toEqual(['a']);
      events.push('answered');
    } finally {
      vi.restoreAllMocks();
    }
    const handed = events.indexOf('handed out');
    expect(handed).toBeGreaterThanOrEqual(0);
    expect(events.slice(handed)).toEqual(['handed out', 'synced', 'answered']);
    expect(await queue.stats()).toMatchObject({ ready: 0, active: 0, autoAcked: 1 });
  } finally {
    await broker.close();
  }
});

it('R21 a receive at most once handed a job by a lease transaction makes its commit durable first (PostgreSQL: synchronous_commit on)', async () => {
  const handoffs = new Handoffs();
  const operation = build.reserve({ ack: 'auto' });
  const stop = new AbortController();
  const answered = handoffs.wait('q', operation, stop.signal);
  const statements: string[] = [];
  const delivery = {
    token: 7,
    id: 'a',
    payload: null,
    deadline: 5,
    deliveryCount: 1,
    redelivered: false,
  };
  const ops = {
    q: { name: 'q', ready: 1 },
    dialect: POSTGRES_DIALECT,
    c: {
      runBeforeCommit: async (sql: string) => {
        statements.push(sql);
      },
    },
    reserve: async () => [delivery],
  } as unknown as QueueOps;
  const batch = new BatchContext('lease');
  await handoffs.serve(ops, 5, batch);
  expect(statements).toEqual([POSTGRES_DIALECT.durableCommit]);
  expect(POSTGRES_DIALECT.durableCommit).toContain("set_config('synchronous_commit', 'on', true)");
  // No answer before the sync where the connection syncs after commits (SQLite).
  expect(batch.answersBeforeSync).toBe(false);
  batch.committed();
  expect(await answered).toEqual([delivery]);
});
