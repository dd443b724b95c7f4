import pg from 'pg';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { MoveJobsOptions } from '../../src/core/index.js';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { POSTGRES_URL, postgresSkipReason, uniqueQueueName } from '../crash/postgres.js';

/**
 * R26 on PostgreSQL: a `moveJobs` takes the locks of the queues it moves jobs between in the
 * order every other transaction takes them (a queue before the queue it dead-letters into,
 * otherwise by name). Moving dead letters back from a dead-letter queue locked that queue
 * first, then each job's origin, while a job dying in the origin holds the origin and wants the
 * dead-letter queue: PostgreSQL broke the cycle after deadlock_timeout by rolling one back.
 *
 * Each engine here is another process's: its own pool of connections. A plain client holds
 * both queues' locks until both calls wait, then lets them go at once; the deadlocks the
 * engines' statements meet are counted where the driver answers them.
 */
let skip: string | undefined;
const engines: Engine[] = [];
const clients: pg.Client[] = [];
const names: string[] = [];

beforeAll(async () => {
  skip = await postgresSkipReason();
});

afterEach(async () => {
  for (const client of clients.splice(0)) await client.end().catch(() => undefined);
  const [first] = engines;
  for (const name of names.splice(0)) await first?.deleteQueue(name);
  await Promise.all(engines.splice(0).map((engine) => engine.close()));
});

async function engine(): Promise<Engine> {
  const opened = await openEngine(POSTGRES_URL, { clockMode: 'follow' });
  engines.push(opened);
  return opened;
}

async function client(): Promise<pg.Client> {
  const opened = new pg.Client({ connectionString: POSTGRES_URL });
  await opened.connect();
  clients.push(opened);
  return opened;
}

/** Resolves once `count` backends of this database wait for a lock. */
async function lockWaiters(observer: pg.Client, count: number): Promise<void> {
  for (;;) {
    const { rows } = await observer.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if (Number(rows[0]?.n) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * How many statements of this process naming one of `queues` PostgreSQL rolled back for a
 * deadlock while `action` ran.
 */
async function deadlocksDuring(
  queues: readonly string[],
  action: () => Promise<unknown>,
): Promise<number> {
  let deadlocks = 0;
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const result = (original as (...a: unknown[]) => unknown).apply(this, args);
    // Values, or literals where the first statement of a transaction is sent with its BEGIN.
    const values = Array.isArray(args[1]) ? (args[1] as unknown[]) : [];
    const text = typeof args[0] === 'string' ? args[0] : '';
    const names = (name: string) => values.includes(name) || text.includes(name);
    if (result instanceof Promise && queues.some(names)) {
      result.catch((error: unknown) => {
        if ((error as { code?: unknown } | null)?.code === '40P01') deadlocks += 1;
      });
    }
    return result;
  } as typeof original;
  try {
    await action();
  } finally {
    pg.Client.prototype.query = original;
  }
  return deadlocks;
}

/** Holds the advisory locks of `queues` (as a transaction of theirs does) until `release()`. */
async function holdQueues(queues: readonly string[]): Promise<() => Promise<void>> {
  const holder = await client();
  await holder.query('BEGIN');
  for (const name of queues) {
    await holder.query('SELECT pg_advisory_xact_lock(744503, hashtext($1))', [name]);
  }
  return async () => {
    await holder.query('COMMIT');
  };
}

describe('PostgreSQL: moveJobs takes its queues in the order a job dying there does', () => {
  const cases: { label: string; options: (source: string) => MoveJobsOptions }[] = [
    { label: 'back to their origins', options: () => ({}) },
    { label: 'back to the origin named in origins', options: (source) => ({ origins: [source] }) },
    { label: 'to the queue that dead-letters into it', options: (source) => ({ to: source }) },
  ];
  for (const { label, options } of cases) {
    it(`R26 dead letters moved ${label} while a job dies there: no deadlock`, {
      timeout: 20_000,
    }, async (context) => {
      if (skip !== undefined) context.skip(skip);
      // The dead-letter queue's name sorts first: name order alone would take it first.
      const dead = uniqueQueueName('move-order-a-dead');
      const source = uniqueQueueName('move-order-b-source');
      names.push(source, dead);
      const dying = await engine();
      const moving = await engine();
      const observer = await client();
      await dying.queue(dead);
      const queue = await dying.queue(source, { deadLetterQueue: dead });
      await queue.publish(1, { id: 'died-before' });
      const [before] = await queue.reserve(1);
      await queue.nack(1, before?.token ?? 0, { requeue: false });
      await queue.publish(1, { id: 'dies-now' });
      const [now] = await queue.reserve(1);
      const moves = await moving.queue(dead);
      const deadlocks = await deadlocksDuring([source, dead], async () => {
        const release = await holdQueues([source, dead]);
        // A job dying holds its queue's lock while it takes its dead-letter queue's.
        const rejected = queue.nack(2, now?.token ?? 0, { requeue: false });
        await lockWaiters(observer, 1);
        const moved = moves.moveJobs(2, options(source));
        await lockWaiters(observer, 2);
        await release();
        expect(await rejected).toBe(true);
        expect(await moved).toBeGreaterThanOrEqual(1);
      });
      expect(deadlocks).toBe(0);
      expect((await queue.inspect()).ready).toContain('died-before');
    });
  }

  it('R26 two moves in opposite directions between two queues take them in one order: no deadlock', {
    timeout: 20_000,
  }, async (context) => {
    if (skip !== undefined) context.skip(skip);
    const first = uniqueQueueName('move-order-a');
    const second = uniqueQueueName('move-order-b');
    names.push(first, second);
    const one = await engine();
    const other = await engine();
    const observer = await client();
    const [oneFirst, otherSecond] = [await one.queue(first), await other.queue(second)];
    await oneFirst.publish(1, { id: 'from-first' });
    await otherSecond.publish(1, { id: 'from-second' });
    const deadlocks = await deadlocksDuring([first, second], async () => {
      const release = await holdQueues([first, second]);
      const forth = oneFirst.moveJobs(2, { to: second });
      await lockWaiters(observer, 1);
      const back = otherSecond.moveJobs(2, { to: first });
      await lockWaiters(observer, 2);
      await release();
      // Whichever went first moved its job, and the other moved both (or that one back).
      expect((await forth) + (await back)).toBeGreaterThanOrEqual(2);
    });
    expect(deadlocks).toBe(0);
  });
});
