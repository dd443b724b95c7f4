import { afterAll, describe, expect, it, vi } from 'vitest';
import { LeaseQueue, type PublishInput } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { DELETE_STEP } from '../../src/engine/sql/delete-in-steps.js';
import { PUBLISH_STEP } from '../../src/engine/sql/publish-steps.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { queueName } from '../conformance/engines.js';
import { TurnCounter } from '../event-loop-turns.js';
import { sqlEngineFactories } from './transaction-table.js';

/**
 * R31 overflow `dead-letter-oldest`: a publish into a queue far above its maxLength (lowered by
 * updateQueue) drops every job beyond it, as one unit with the publish (R5). The drops were read
 * and written in one piece: 100,000 jobs held SQLite's process for 1–3 s, and on PostgreSQL went
 * as one statement of 3.5 MB of ids (35 MB for 1,000,000), built while the transaction waited.
 * They go in steps of the publish's transaction: PUBLISH_STEP jobs a statement on PostgreSQL,
 * DELETE_STEP on SQLite with a turn of the event loop between two.
 */
const sqlEngines = sqlEngineFactories();
afterAll(async () => {
  await Promise.all(sqlEngines.map((factory) => factory.cleanup()));
});

const RANGE_READ = /WHERE queue = \? AND state = 'ready' AND ready_pos >= \? AND ready_pos < \?/;
const DEATH_WRITE = /^\s*UPDATE leaseq_jobs SET state = 'dead', dead_reason = \?/;
const KEPT = 3;

/** Jobs of two priorities, the lower band longer than a step, a group among them. */
function jobs(count: number): PublishInput[] {
  return Array.from({ length: count }, (_, n) => ({
    id: `j${n}`,
    ...(n % 7 === 0 ? { priority: 1 } : {}),
    ...(n % 500 === 0 ? { group: 'G' } : {}),
  }));
}

/** What the core leaves: the dead in the order they died, and the ready jobs. */
function expected(count: number): { dead: string[]; ready: string[] } {
  const core = new LeaseQueue({ visibility: 60_000 });
  core.publishBatch(1, jobs(count));
  core.reconfigure({ visibility: 60_000, maxLength: KEPT, overflow: 'dead-letter-oldest' });
  core.publish(2, { id: 'last' });
  const view = core.inspect();
  return { dead: view.dead.map((job) => job.id), ready: view.ready };
}

/** How many jobs a statement that writes deaths carries: its JSON list of them, or one. */
function deathsOf(params: readonly SqlValue[]): number {
  const list = params.find((value) => typeof value === 'string' && value.startsWith('['));
  return list === undefined ? 1 : (JSON.parse(String(list)) as unknown[]).length;
}

/**
 * While `work` runs: the jobs each statement writing deaths carries, and of each range read of
 * the oldest ready jobs, how many positions it reads and the turns of the event loop counted
 * when it ran. `fail` may refuse the statement at `index` (0 first) of those that write deaths.
 */
async function watched(
  work: () => Promise<unknown>,
  fail: (index: number) => boolean = () => false,
): Promise<{ writes: number[]; reads: number[]; readTurns: number[] }> {
  const writes: number[] = [];
  const reads: number[] = [];
  const readTurns: number[] = [];
  const loop = new TurnCounter();
  const refuse = () => {
    const index = writes.length - 1;
    if (fail(index)) throw new Error(`death write ${index} refused`);
  };
  for (const Connection of [SqliteConnection, PostgresConnection]) {
    const { query, run, runEach } = Connection.prototype;
    vi.spyOn(Connection.prototype, 'query').mockImplementation(function (
      this: InstanceType<typeof Connection>,
      sql: string,
      params: readonly SqlValue[] = [],
    ) {
      if (RANGE_READ.test(sql)) {
        reads.push(Number(params[2]) - Number(params[1]));
        readTurns.push(loop.turns);
      }
      return query.call(this, sql, params);
    } as typeof query);
    vi.spyOn(Connection.prototype, 'run').mockImplementation(async function (
      this: InstanceType<typeof Connection>,
      sql: string,
      params: readonly SqlValue[] = [],
    ) {
      if (DEATH_WRITE.test(sql)) {
        writes.push(deathsOf(params));
        refuse();
      }
      return run.call(this, sql, params);
    } as typeof run);
    vi.spyOn(Connection.prototype, 'runEach').mockImplementation(async function (
      this: InstanceType<typeof Connection>,
      sql: string,
      paramLists: readonly (readonly SqlValue[])[],
    ) {
      if (DEATH_WRITE.test(sql)) {
        writes.push(paramLists.length);
        refuse();
      }
      return runEach.call(this, sql, paramLists);
    } as typeof runEach);
  }
  loop.start();
  try {
    await work();
  } finally {
    loop.stop();
    vi.restoreAllMocks();
  }
  return { writes, reads, readTurns };
}

describe.each(sqlEngines)('a publish that drops many jobs beyond maxLength on $name', (factory) => {
  const step = factory.name === 'postgres' ? PUBLISH_STEP : DELETE_STEP;
  /** Over two steps of the lower band, and some of the higher. */
  const count = 2 * step + step / 2;

  async function withFullQueue(label: string, work: (queue: QueueHandle) => Promise<void>) {
    const engine = await factory.open();
    const name = queueName(label);
    try {
      const queue = await engine.queue(name, { visibility: 60_000 });
      const all = jobs(count);
      for (let start = 0; start < all.length; start += step) {
        await queue.publishBatch(1, all.slice(start, start + step));
      }
      await engine.updateQueue(name, { maxLength: KEPT, overflow: 'dead-letter-oldest' });
      await work(queue);
    } finally {
      await engine.deleteQueue(name);
      await engine.close();
    }
  }

  it('R31 reads and writes the jobs it drops a step at a time, in the core order', async () => {
    await withFullQueue('drop-steps', async (queue) => {
      const { writes, reads, readTurns } = await watched(() => queue.publish(2, { id: 'last' }));
      expect(reads.length).toBeGreaterThan(2);
      for (const positions of reads) expect(positions).toBeLessThanOrEqual(step);
      expect(writes.length).toBeGreaterThan(2);
      for (const jobsWritten of writes) expect(jobsWritten).toBeLessThanOrEqual(step);
      if (factory.name === 'sqlite') {
        // The event loop turned between the first read of the oldest jobs and the last.
        expect(readTurns.at(-1) ?? 0).toBeGreaterThanOrEqual((readTurns[0] ?? 0) + 2);
      }
      const view = await queue.inspect();
      const core = expected(count);
      expect({ dead: view.dead.map((job) => job.id), ready: view.ready }).toEqual(core);
      expect((await queue.stats(3)).deadLetters).toEqual({ maxlen: core.dead.length });
      expect(writes.reduce((sum, each) => sum + each, 0)).toBe(core.dead.length);
    });
  });

  it('R5 a step that fails after others were written leaves nothing of the publish', async () => {
    await withFullQueue('drop-steps-fail', async (queue) => {
      await expect(
        watched(
          () => queue.publish(2, { id: 'last' }),
          (index) => index === 1,
        ),
      ).rejects.toThrow('death write 1 refused');
      const stats = await queue.stats(3);
      expect({ jobs: stats.ready + stats.waiting, dead: stats.dead }).toEqual({
        jobs: count,
        dead: 0,
      });
      expect(await queue.job('last')).toBeUndefined();
      expect((await queue.inspect({ limit: 1 })).ready).toEqual(['j0']);
    });
  });
});
