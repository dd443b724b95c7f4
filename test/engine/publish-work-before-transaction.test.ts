import { afterAll, describe, expect, it, vi } from 'vitest';
import { EngineBroker } from '../../src/broker/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { ManualClock } from '../../src/index.js';
import { queueName } from '../conformance/engines.js';
import { TurnCounter } from '../event-loop-turns.js';
import { statementsOf } from './scaling-helpers.js';
import { sqlEngineFactories } from './transaction-table.js';

/**
 * A call's transaction holds its queue from its first statement (the queue row, locked) to
 * its commit: every other call of the queue waits meanwhile, and on PostgreSQL a database's
 * idle_in_transaction_session_timeout counts that time. What depends on the call's arguments
 * alone (its payloads as JSON) is done as the call is made, before the transaction; what must
 * be done inside (the generated ids, from the queue's numbering) costs the same per job however
 * many jobs the call has; and the jobs a redrive names are looked up together where each
 * statement is a round trip.
 */
const sqlEngines = sqlEngineFactories();
afterAll(async () => {
  await Promise.all(sqlEngines.map((factory) => factory.cleanup()));
});

/** Notes `event` each time a statement that reads a queue row runs, during `work`. */
async function withQueueRowReads<T>(events: string[], work: () => Promise<T>): Promise<T> {
  for (const Connection of [SqliteConnection, PostgresConnection]) {
    const { query } = Connection.prototype;
    vi.spyOn(Connection.prototype, 'query').mockImplementation(function (
      this: InstanceType<typeof Connection>,
      sql: string,
      params: readonly SqlValue[] = [],
    ) {
      if (/leaseq_queues|leaseq_load_queue/.test(sql)) events.push('queue row');
      return query.call(this, sql, params);
    } as typeof query);
  }
  try {
    return await work();
  } finally {
    vi.restoreAllMocks();
  }
}

describe.each(sqlEngines)('work of a publish before its transaction on $name', (factory) => {
  async function setUp() {
    const engine = await factory.open();
    const broker = new EngineBroker(engine, { clock: new ManualClock(1_000) });
    const name = queueName('before-tx');
    const queue = await broker.queue(name, { visibility: 1_000 });
    const close = async () => {
      await broker.deleteQueue(name);
      await broker.close();
    };
    return { broker, queue, name, close };
  }

  it('serializes the payloads of a publishBatch before its transaction reads the queue row', async () => {
    const { queue, close } = await setUp();
    const events: string[] = [];
    const payload = (n: number) => ({
      toJSON: () => {
        events.push(`payload ${n}`);
        return n;
      },
    });
    await withQueueRowReads(events, () =>
      queue.publishBatch([{ payload: payload(1) }, { payload: payload(2) }]),
    );
    expect(events[0]).toBe('payload 1');
    expect(events[1]).toBe('payload 2');
    expect(events.slice(2)).toContain('queue row');
    expect(events.slice(2).every((event) => event === 'queue row')).toBe(true);
    expect((await queue.receive({ max: 2 })).map((delivery) => delivery.payload)).toEqual([1, 2]);
    await close();
  });

  it('keeps the payload a transaction publishes as it was at the call', async () => {
    const { broker, queue, name, close } = await setUp();
    await broker.transaction(async (tx) => {
      const payload = { n: 1 };
      const published = tx.publish(name, { id: 'in-tx', payload });
      payload.n = 2;
      await published;
    });
    expect((await queue.job('in-tx'))?.payload).toEqual({ n: 1 });
    await close();
  });

  it('hands out the generated ids of a big publishBatch without copying the list left each time', async () => {
    const { queue, close } = await setUp();
    const count = 20_000;
    // Array.prototype.shift copies what follows the first element down by one: over a list
    // of all the call's ids, a copy of the whole list per job.
    // (Replaced by hand: a spy's own bookkeeping would shift arrays too.)
    let longestShifted = 0;
    const { shift } = Array.prototype;
    Array.prototype.shift = function (this: unknown[]) {
      if (this.length > longestShifted) longestShifted = this.length;
      return shift.call(this);
    };
    let results: { id: string }[];
    try {
      results = await queue.publishBatch(Array.from({ length: count }, () => ({})));
    } finally {
      Array.prototype.shift = shift;
    }
    expect(longestShifted).toBeLessThan(1_000);
    expect(new Set(results.map((result) => result.id)).size).toBe(count);
    expect((await queue.stats()).ready).toBe(count);
    await close();
  });

  it('looks up the jobs a redrive names together where statements are round trips, in the order named', async () => {
    const engine = await factory.open();
    const name = queueName('redrive-named');
    try {
      const queue = await engine.queue(name, { visibility: 1_000, retention: 100 });
      const count = 1_500;
      const ids = Array.from({ length: count }, (_, index) => `dead-${index}`);
      await queue.publishBatch(
        0,
        ids.map((id) => ({ id })),
      );
      expect((await queue.stats(200)).dead).toBe(count);
      await engine.updateQueue(name, { retention: null });
      const named = [...ids].reverse();
      const lookups = await statementsOf(
        factory.name === 'postgres' ? PostgresConnection : SqliteConnection,
        /\bid (= \?|IN \(|= ANY\()/,
        async () => {
          expect(await queue.redrive(300, [...named, 'missing', named[0] as string])).toBe(count);
        },
      );
      // A step of at most 1,000 jobs each: one lookup a step, not one a job.
      if (factory.name === 'postgres') {
        expect(lookups.length).toBeGreaterThan(0);
        expect(lookups.length).toBeLessThanOrEqual(2);
      }
      expect((await queue.inspect()).ready).toEqual(named);
    } finally {
      await engine.deleteQueue(name);
      await engine.close();
    }
  });
});

describe('a publish of many jobs on SQLite', () => {
  const sqlite = sqlEngines.find((factory) => factory.name === 'sqlite');

  it('inserts them in steps of at most 1000 with a turn of the event loop between two', async () => {
    const engine = await (sqlite as (typeof sqlEngines)[number]).open();
    const name = queueName('insert-steps');
    const loop = new TurnCounter();
    /** Per INSERT of jobs: how many rows, and the turns counted when it ran. */
    const inserts: { rows: number; turns: number }[] = [];
    const { runEach } = SqliteConnection.prototype;
    vi.spyOn(SqliteConnection.prototype, 'runEach').mockImplementation(function (
      this: SqliteConnection,
      sql: string,
      paramLists: readonly (readonly SqlValue[])[],
    ) {
      if (/^INSERT INTO leaseq_jobs\b/.test(sql))
        inserts.push({ rows: paramLists.length, turns: loop.turns });
      return runEach.call(this, sql, paramLists);
    });
    try {
      const queue = await engine.queue(name, { visibility: 1_000 });
      loop.start();
      const jobs = Array.from({ length: 2_500 }, (_, index) => ({ id: `j${index}` }));
      await queue.publishBatch(1, jobs);
      loop.stop();
      expect(inserts.map((insert) => insert.rows)).toEqual([1_000, 1_000, 500]);
      for (let index = 1; index < inserts.length; index += 1) {
        expect(inserts[index]?.turns).toBeGreaterThan(inserts[index - 1]?.turns ?? 0);
      }
      expect((await queue.inspect()).ready).toEqual(jobs.map((job) => job.id));
    } finally {
      loop.stop();
      vi.restoreAllMocks();
      await engine.deleteQueue(name);
      await engine.close();
    }
  });
});
