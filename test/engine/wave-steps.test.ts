import { afterAll, describe, expect, it, vi } from 'vitest';
import type { Engine, QueueHandle } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { DELETE_STEP } from '../../src/engine/sql/delete-in-steps.js';
import { PUBLISH_STEP } from '../../src/engine/sql/publish-steps.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { engineFactories, postgresReachable, queueName } from '../conformance/engines.js';

/**
 * Many jobs that change state at one step (R3: leases that run out together, delayed jobs due
 * together, jobs that expire together; R16: a session that ends holding many deliveries; R13:
 * jobs out of deliveries that die as their leases end) are written in bounded steps of that one
 * transaction: on PostgreSQL at most PUBLISH_STEP jobs a statement, never one statement a job;
 * on SQLite, whose statements run in this process, with a turn of the event loop between two
 * steps of DELETE_STEP jobs. 1,000,000 leases that ran out together went back in one statement
 * of 158 MB on PostgreSQL and held a SQLite process for 100 s; 10,000 jobs out of deliveries
 * took 13 s on PostgreSQL, a statement each (31 s for 10,000 expiring into a dead-letter queue).
 */
const factories = engineFactories();
const byName = (name: string) => factories.find((factory) => factory.name === name);
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

/** Statements that write jobs' new states (not an insert, not a read). */
const STATE_WRITE =
  /^\s*UPDATE leaseq_jobs SET (state = '(ready|delayed|dead)'|queue = |history = )/;

/** Reads of the jobs a step changes: leases ended, a session's deliveries, delays, expiries. */
const WAVE_READ =
  /^\s*SELECT .* FROM leaseq_jobs\s+WHERE queue = \? AND (state = 'active' AND (deadline <=|session =)|state = 'delayed' AND available_at <=|expiry_at <= \? AND state IN)/s;

/**
 * One statement (a `runEach` counts as one step of them) that wrote jobs, or one read of
 * WAVE_READ: its SQL and rows.
 */
interface Write {
  sql: string;
  rows: number;
  /** The turns of the event loop counted when it ran (see `turns`). */
  turn: number;
}

/** Counts turns of the event loop while `running`: a callback that schedules itself again. */
function turnCounter() {
  const counter = { turns: 0, running: true };
  const tick = () => {
    counter.turns += 1;
    if (counter.running) setImmediate(tick);
  };
  setImmediate(tick);
  return counter;
}

/**
 * The statements matching STATE_WRITE or WAVE_READ run while `work` runs, with the turns
 * counted at each.
 */
async function stateWrites(work: () => Promise<unknown>): Promise<Write[]> {
  const seen: Write[] = [];
  const counter = turnCounter();
  for (const Connection of [SqliteConnection, PostgresConnection]) {
    const { query, run, runEach } = Connection.prototype;
    vi.spyOn(Connection.prototype, 'query').mockImplementation(async function (
      this: InstanceType<typeof Connection>,
      sql: string,
      params: readonly SqlValue[] = [],
    ) {
      const turn = counter.turns;
      const rows = await (
        query as (sql: string, params: readonly SqlValue[]) => Promise<object[]>
      ).call(this, sql, params);
      if (WAVE_READ.test(sql)) seen.push({ sql, rows: rows.length, turn });
      return rows;
    } as typeof query);
    vi.spyOn(Connection.prototype, 'run').mockImplementation(function (
      this: InstanceType<typeof Connection>,
      sql: string,
      params: readonly SqlValue[] = [],
    ) {
      if (STATE_WRITE.test(sql)) {
        const list = params.find((value) => typeof value === 'string' && value.startsWith('['));
        const rows = list === undefined ? 1 : JSON.parse(String(list)).length;
        seen.push({ sql, rows, turn: counter.turns });
      }
      return run.call(this, sql, params);
    } as typeof run);
    vi.spyOn(Connection.prototype, 'runEach').mockImplementation(function (
      this: InstanceType<typeof Connection>,
      sql: string,
      paramLists: readonly (readonly SqlValue[])[],
    ) {
      if (STATE_WRITE.test(sql)) seen.push({ sql, rows: paramLists.length, turn: counter.turns });
      return runEach.call(this, sql, paramLists);
    } as typeof runEach);
  }
  try {
    await work();
  } finally {
    counter.running = false;
    vi.restoreAllMocks();
  }
  return seen;
}

/** The writes of `writes` whose SQL matches `pick`, by their rows. */
function rowsOf(writes: readonly Write[], pick: RegExp): number[] {
  return writes.filter((write) => pick.test(write.sql)).map((write) => write.rows);
}

const jobs = (count: number, prefix = 'j') =>
  Array.from({ length: count }, (_, index) => ({ id: `${prefix}${index}` }));

async function withEngine(name: string, work: (engine: Engine) => Promise<void>): Promise<void> {
  const engine = await (byName(name) as (typeof factories)[number]).open();
  try {
    await work(engine);
  } finally {
    await engine.close();
  }
}

/** A queue of its own, deleted after `work` (and the dead-letter queue `work` may name). */
async function withQueues(
  engine: Engine,
  label: string,
  work: (names: { queue: string; dlq: string }) => Promise<void>,
): Promise<void> {
  const names = { queue: queueName(label), dlq: queueName(`${label}-dlq`) };
  try {
    await work(names);
  } finally {
    await engine.deleteQueue(names.queue);
    await engine.deleteQueue(names.dlq);
  }
}

const ids = async (queue: QueueHandle) => (await queue.inspect()).ready;

describe('many jobs changing state at one step on postgres', async () => {
  const reachable = await postgresReachable();

  it.skipIf(!reachable)(
    'R3 R12 R30 writes delayed jobs due, leases ended and expiries at most PUBLISH_STEP jobs a statement',
    async () => {
      await withEngine('postgres', (engine) =>
        withQueues(engine, 'wave-rows', async ({ queue: name }) => {
          const count = 2 * PUBLISH_STEP + 1;
          const queue = await engine.queue(name, { visibility: 10, retention: 1_000 });
          await queue.publishBatch(
            0,
            jobs(count).map((job) => ({ ...job, delay: 5 })),
          );
          const promoted = await stateWrites(() => queue.stats(5));
          expect(rowsOf(promoted, /SET state = 'ready'/)).toEqual([PUBLISH_STEP, PUBLISH_STEP, 1]);

          expect(await queue.reserve(5, { max: count })).toHaveLength(count);
          const ended = await stateWrites(async () => {
            expect(await queue.stats(15)).toMatchObject({ ready: count, expiries: count });
          });
          expect(rowsOf(ended, /SET state = 'ready'/)).toEqual([PUBLISH_STEP, PUBLISH_STEP, 1]);
          // R12: back at the front in token order, their counts kept.
          const again = await queue.reserve(15, { max: 3, visibility: 1_000 });
          expect(again.map((delivery) => [delivery.id, delivery.deliveryCount])).toEqual([
            ['j0', 2],
            ['j1', 2],
            ['j2', 2],
          ]);
          await queue.ackMany(
            15,
            again.map((delivery) => delivery.token),
          );

          const expired = await stateWrites(async () => {
            expect(await queue.stats(1_000)).toMatchObject({ ready: 0, dead: count - 3 });
          });
          expect(rowsOf(expired, /SET state = 'dead'/)).toEqual([PUBLISH_STEP, PUBLISH_STEP - 2]);
        }),
      );
    },
    120_000,
  );

  it.skipIf(!reachable)(
    'R13 R26 R30 jobs that die together are written together, not a statement or three each',
    async () => {
      await withEngine('postgres', (engine) =>
        withQueues(engine, 'wave-deaths', async ({ queue: name, dlq }) => {
          const count = 200;
          const queue = await engine.queue(name, { visibility: 10, maxDeliveries: 1 });
          await queue.publishBatch(0, jobs(count));
          await queue.reserve(0, { max: count });
          // R13: every lease ends at 10, each job out of deliveries.
          const died = await stateWrites(() => queue.stats(10));
          expect(rowsOf(died, /^\s*UPDATE/)).toEqual([count]);
          expect((await queue.deadLetters()).map((dead) => dead.id)).toEqual(
            jobs(count).map((job) => job.id),
          );

          await engine.queue(dlq, {});
          await engine.updateQueue(name, { deadLetterQueue: dlq, retention: 100 });
          await queue.publishBatch(
            10,
            jobs(count, 'k').map((job, index) => ({ ...job, delay: index < count / 2 ? 0 : 5 })),
          );
          await queue.reserve(10, { max: count / 2, visibility: 20 });
          // R13 then R30, both into the dead-letter queue: the leases end at 30, the rest of
          // the jobs expire at 110.
          const moved = await stateWrites(() => queue.stats(30));
          expect(rowsOf(moved, /SET queue = /)).toEqual([count / 2]);
          const expired = await stateWrites(() => queue.stats(110));
          expect(rowsOf(expired, /SET queue = /)).toEqual([count / 2]);
          const target = engine.handle(dlq);
          expect(await ids(target)).toEqual(jobs(count, 'k').map((job) => job.id));
        }),
      );
    },
    60_000,
  );
});

describe('many jobs changing state at one step on sqlite', () => {
  /** Whether the writes of `writes` matching `pick` ran with turns of the event loop between. */
  function turnedBetween(writes: readonly Write[], pick: RegExp): boolean {
    const picked = writes.filter((write) => pick.test(write.sql));
    const first = picked[0]?.turn ?? 0;
    const last = picked.at(-1)?.turn ?? 0;
    return picked.length >= 3 && last >= first + 2;
  }

  const count = 2 * DELETE_STEP + 500;

  it('R3 R12 R16 R30 lets the event loop turn between steps of delayed jobs due, leases and expiries', async () => {
    await withEngine('sqlite', (engine) =>
      withQueues(engine, 'wave-turns', async ({ queue: name }) => {
        const queue = await engine.queue(name, { visibility: 10, retention: 1_000 });
        await queue.publishBatch(
          0,
          jobs(count).map((job) => ({ ...job, delay: 5 })),
        );
        const promoted = await stateWrites(() => queue.stats(5));
        expect(turnedBetween(promoted, /available_at <=/)).toBe(true);
        expect(turnedBetween(promoted, /SET state = 'ready'/)).toBe(true);

        await queue.reserve(5, { max: count });
        const ended = await stateWrites(() => queue.stats(15));
        expect(turnedBetween(ended, /deadline <=/)).toBe(true);
        expect(turnedBetween(ended, /SET state = 'ready'/)).toBe(true);

        const session = await queue.openSession(15);
        await queue.reserve(15, { max: count, session, visibility: 500 });
        const closed = await stateWrites(() => queue.closeSession(16, session));
        expect(turnedBetween(closed, /AND session = \?/)).toBe(true);
        expect(turnedBetween(closed, /SET state = 'ready'/)).toBe(true);
        expect(await ids(queue)).toEqual(jobs(count).map((job) => job.id));

        const expired = await stateWrites(() => queue.stats(1_000));
        expect(turnedBetween(expired, /expiry_at <=/)).toBe(true);
        expect(turnedBetween(expired, /SET state = 'dead'/)).toBe(true);
        expect(await queue.stats(1_000)).toMatchObject({ ready: 0, dead: count, expired: count });
      }),
    );
  }, 60_000);

  it('R13 lets the event loop turn between steps of jobs that die as their leases end', async () => {
    await withEngine('sqlite', (engine) =>
      withQueues(engine, 'wave-death-turns', async ({ queue: name }) => {
        const queue = await engine.queue(name, { visibility: 10, maxDeliveries: 1 });
        await queue.publishBatch(0, jobs(count));
        await queue.reserve(0, { max: count });
        const died = await stateWrites(() => queue.stats(10));
        expect(turnedBetween(died, /state = 'dead'/)).toBe(true);
        expect(await queue.stats(10)).toMatchObject({ dead: count });
      }),
    );
  }, 60_000);
});

describe.each(factories.map((factory) => factory.name))('jobs that die together on %s', (name) => {
  it('R13 R14 R26 die in token order, those taken by the dead-letter queue with their history and origin', async (context) => {
    if (name === 'postgres' && !(await postgresReachable())) return context.skip('no PostgreSQL');
    await withEngine(name, (engine) =>
      withQueues(engine, 'die-together', async ({ queue: source, dlq }) => {
        await engine.queue(dlq, {});
        const queue = await engine.queue(source, {
          visibility: 10,
          maxDeliveries: 2,
          deadLetterQueue: dlq,
        });
        await queue.publishBatch(0, [
          { id: 'a', group: 'g' },
          { id: 'b', group: 'g' },
          { id: 'c' },
          { id: 'd' },
          { id: 'e' },
        ]);
        // Already there: the dead-letter queue does not take it (R26), it dies where it was.
        await engine.handle(dlq).publish(0, { id: 'e' });
        // Delivered in a session (tokens 1 to 4), given back, then delivered once more.
        const session = await queue.openSession(0);
        const first = await queue.reserve(0, { max: 4, session });
        expect(first.map((delivery) => delivery.id)).toEqual(['a', 'c', 'd', 'e']);
        await queue.nackUpTo(1, session, first.at(-1)?.token as number, { reason: 'again' });
        const second = await queue.reserve(1, { max: 4 });
        expect(second.map((delivery) => delivery.id)).toEqual(['a', 'c', 'd', 'e']);
        // Every lease ends at 11: each job is at maxDeliveries and dies (R13), in token order.
        const stats = await queue.stats(11);
        expect(stats).toMatchObject({ active: 0, dead: 1, ready: 1, waiting: 0, expiries: 4 });
        expect(stats.deadLetters).toEqual({ 'max-deliveries': 4 });
        // b went on when a left its group (R24).
        expect(await ids(queue)).toEqual(['b']);
        expect((await queue.deadLetters()).map((dead) => [dead.id, dead.reason])).toEqual([
          ['e', 'max-deliveries'],
        ]);
        const target = engine.handle(dlq);
        expect(await ids(target)).toEqual(['e', 'a', 'c', 'd']);
        const moved = await target.job('c');
        expect(moved?.origin).toEqual({ queue: source, reason: 'max-deliveries', at: 11 });
        expect(moved?.history.map((attempt) => [attempt.outcome, attempt.endedAt])).toEqual([
          ['requeued', 1],
          ['expired', 11],
        ]);
        const stayed = await queue.job('e');
        expect(stayed?.history.map((attempt) => attempt.outcome)).toEqual(['requeued', 'expired']);
      }),
    );
  });
});
