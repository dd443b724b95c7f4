import { afterAll, describe, expect, it, vi } from 'vitest';
import type { QueueHandle } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { PUBLISH_STEP, PUBLISH_STEP_CHARS } from '../../src/engine/sql/publish-steps.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { queueName } from '../conformance/engines.js';
import { TurnCounter } from '../event-loop-turns.js';
import { sqlEngineFactories } from './transaction-table.js';

/**
 * A publish is one unit (R5) however many jobs it carries, and is written in steps within its
 * transaction: on PostgreSQL the rows of one statement travel as one JSON text, and one text for
 * all of them stopped at the longest string the process can make (10,000 payloads of 100 KB
 * failed with a bare `RangeError: Invalid string length`), and was built while the transaction
 * waited; on SQLite the statements run in this process, with a turn of the event loop between
 * two steps.
 */
const sqlEngines = sqlEngineFactories();
afterAll(async () => {
  await Promise.all(sqlEngines.map((factory) => factory.cleanup()));
});

const JOB_INSERT = /^\s*INSERT INTO leaseq_jobs\b/;

/** Characters of the text values of a statement's parameters. */
function chars(params: readonly SqlValue[]): number {
  return params.reduce<number>(
    (sum, value) => sum + (typeof value === 'string' ? value.length : 0),
    0,
  );
}

/**
 * Each statement (a `runEach` counts as one step of them) that inserts jobs while `work` runs:
 * how many rows, and how many characters of text its parameters carry. `inject` may replace
 * the parameters of the statement at `index` (0 first).
 */
async function jobInserts(
  work: () => Promise<unknown>,
  inject: (index: number, params: SqlValue[][]) => SqlValue[][] = (_index, params) => params,
): Promise<{ rows: number; chars: number }[]> {
  const seen: { rows: number; chars: number }[] = [];
  for (const Connection of [SqliteConnection, PostgresConnection]) {
    const { run, runEach } = Connection.prototype;
    vi.spyOn(Connection.prototype, 'run').mockImplementation(function (
      this: InstanceType<typeof Connection>,
      sql: string,
      params: readonly SqlValue[] = [],
    ) {
      if (!JOB_INSERT.test(sql)) return run.call(this, sql, params);
      const rows = JSON.parse(
        String(params.find((value) => typeof value === 'string' && value.startsWith('['))) ?? '[]',
      ).length;
      seen.push({ rows, chars: chars(params) });
      const [changed] = inject(seen.length - 1, [[...params]]);
      return run.call(this, sql, changed ?? params);
    } as typeof run);
    vi.spyOn(Connection.prototype, 'runEach').mockImplementation(function (
      this: InstanceType<typeof Connection>,
      sql: string,
      paramLists: readonly (readonly SqlValue[])[],
    ) {
      if (!JOB_INSERT.test(sql)) return runEach.call(this, sql, paramLists);
      seen.push({
        rows: paramLists.length,
        chars: paramLists.reduce((sum, params) => sum + chars(params), 0),
      });
      const changed = inject(
        seen.length - 1,
        paramLists.map((params) => [...params]),
      );
      return runEach.call(this, sql, changed);
    } as typeof runEach);
  }
  try {
    await work();
  } finally {
    vi.restoreAllMocks();
  }
  return seen;
}

describe.each(sqlEngines)('a publish of many jobs on $name', (factory) => {
  async function withQueue(label: string, work: (queue: QueueHandle) => Promise<void>) {
    const engine = await factory.open();
    const name = queueName(label);
    try {
      await work(await engine.queue(name, { visibility: 60_000 }));
    } finally {
      await engine.deleteQueue(name);
      await engine.close();
    }
  }

  /** Nine jobs of a quarter of a step's characters each: three steps, of 4, 4 and 1. */
  const payloadChars = PUBLISH_STEP_CHARS / 4;
  const bigJobs = Array.from({ length: 9 }, (_, index) => ({
    id: `big-${index}`,
    payload: String(index).repeat(payloadChars),
  }));

  it('R5 writes payloads of more characters than one step in several, each within it, all kept', async () => {
    await withQueue('step-chars', async (queue) => {
      const inserts = await jobInserts(() => queue.publishBatch(1, bigJobs));
      expect(inserts.map((insert) => insert.rows)).toEqual([4, 4, 1]);
      for (const insert of inserts) {
        // A step ends with the job that reaches the bound: never a whole job more.
        expect(insert.chars).toBeLessThan(PUBLISH_STEP_CHARS + payloadChars);
      }
      const deliveries = await queue.reserve(2, { max: bigJobs.length });
      expect(deliveries.map((delivery) => delivery.id)).toEqual(bigJobs.map((job) => job.id));
      expect(
        deliveries.every((delivery, index) => delivery.payload === bigJobs[index]?.payload),
      ).toBe(true);
    });
  });

  it('R5 a step that fails after others were written leaves nothing of the publish', async () => {
    await withQueue('step-fails', async (queue) => {
      // The second step's statement is refused by the storage: on PostgreSQL its rows are no
      // JSON, on SQLite each row lacks a value.
      const refused = (params: SqlValue[]) =>
        factory.name === 'postgres'
          ? params.map((value) =>
              typeof value === 'string' && value.startsWith('[') ? 'x' : value,
            )
          : params.slice(1);
      const failing = jobInserts(
        () => queue.publishBatch(1, bigJobs),
        (index, lists) => (index === 1 ? lists.map(refused) : lists),
      );
      await expect(failing).rejects.toThrow();
      expect(await queue.stats(2)).toMatchObject({ ready: 0, published: 0 });
      expect(await queue.job('big-0')).toBeUndefined();
      // The queue goes on: the same publish again is stored whole.
      await queue.publishBatch(3, bigJobs);
      expect((await queue.inspect()).ready).toEqual(bigJobs.map((job) => job.id));
    });
  });
});

describe('a publish of many jobs on postgres', () => {
  const postgres = sqlEngines.find((factory) => factory.name === 'postgres');

  it('R5 writes at most PUBLISH_STEP jobs a statement', async (context) => {
    if (postgres === undefined) return context.skip('no PostgreSQL engine in this run');
    const engine = await postgres.open();
    const name = queueName('step-rows');
    try {
      const queue = await engine.queue(name, { visibility: 60_000 });
      const jobs = Array.from({ length: 2 * PUBLISH_STEP + 1 }, (_, index) => ({
        id: `j${index}`,
        payload: index,
      }));
      const inserts = await jobInserts(() => queue.publishBatch(1, jobs));
      expect(inserts.map((insert) => insert.rows)).toEqual([PUBLISH_STEP, PUBLISH_STEP, 1]);
      expect(await queue.stats(2)).toMatchObject({ ready: jobs.length });
      const [first] = await queue.reserve(3, { max: 1 });
      expect(first).toMatchObject({ id: 'j0', payload: 0 });
    } finally {
      await engine.deleteQueue(name);
      await engine.close();
    }
  });
});

describe('a publish of many jobs already there on sqlite', () => {
  const sqlite = sqlEngines.find((factory) => factory.name === 'sqlite');

  it('R4 looks up their ids in steps with a turn of the event loop between two', async () => {
    const engine = await (sqlite as (typeof sqlEngines)[number]).open();
    const name = queueName('lookup-steps');
    const loop = new TurnCounter();
    try {
      const queue = await engine.queue(name, { visibility: 1_000 });
      const jobs = Array.from({ length: 2_500 }, (_, index) => ({ id: `j${index}` }));
      await queue.publishBatch(1, jobs);
      /** The turns counted at each look-up of one id. */
      const lookups: number[] = [];
      const { query } = SqliteConnection.prototype;
      vi.spyOn(SqliteConnection.prototype, 'query').mockImplementation(function (
        this: SqliteConnection,
        sql: string,
        params: readonly SqlValue[] = [],
      ) {
        if (/FROM leaseq_jobs WHERE queue = \? AND id = \?/.test(sql)) lookups.push(loop.turns);
        return query.call(this, sql, params);
      } as typeof query);
      loop.start();
      // Every id is there: the publish only looks them up, and writes nothing.
      const results = await queue.publishBatch(2, jobs);
      loop.stop();
      expect(results.every((result) => result.duplicate)).toBe(true);
      expect(lookups).toHaveLength(jobs.length);
      const first = lookups[0] ?? 0;
      const last = lookups.at(-1) ?? 0;
      expect(last).toBeGreaterThanOrEqual(first + 2);
      expect(await queue.stats(3)).toMatchObject({ ready: jobs.length, duplicates: jobs.length });
    } finally {
      loop.stop();
      vi.restoreAllMocks();
      await engine.deleteQueue(name);
      await engine.close();
    }
  });
});
