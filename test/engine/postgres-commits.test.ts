import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from '../../src/core/index.js';
import { openEngine } from '../../src/engine/index.js';
import { TOKEN_BLOCK } from '../../src/engine/sql/token-block.js';
import { POSTGRES_URL, postgresSkipReason, withPostgresClient } from '../crash/postgres.js';
import { roundTrips } from './round-trips.js';

/**
 * R21 on PostgreSQL: a reserve and an ack are one round trip each; reservations commit without
 * waiting for the WAL flush, their tokens fenced by a mark made durable first, so a crash that
 * loses a reservation leaves its job ready and hands it out again under a fresh token.
 *
 * The tests run in a schema of their own (through search_path): the crash they stage empties
 * the schema's unlogged marker table, which must not touch the queues of other tests.
 */
const SCHEMA = `leaseq_r21_${process.pid}`;
const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${SCHEMA}`)}`;
let skip: string | undefined;

function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  return withPostgresClient(work, url);
}

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip !== undefined) return;
  await admin((client) => client.query(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`));
});

afterAll(async () => {
  if (skip !== undefined) return;
  await admin((client) => client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`));
});

async function tokenMark(queue: string): Promise<{ next: number; high: number }> {
  return admin(async (client) => {
    const { rows } = await client.query(
      'SELECT next_token::int AS next, token_high_water::int AS high FROM leaseq_queues WHERE name = $1',
      [queue],
    );
    return rows[0] as { next: number; high: number };
  });
}

describe('R21 PostgreSQL: one round trip per reserve and ack, reservations fenced', () => {
  it('a reserve and an ack are one statement each; tokens go 1, 2, 3 under a mark a block ahead', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    try {
      const queue = await engine.queue('trips', { visibility: 1000 });
      await queue.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      await queue.reserve(1); // the pool's first connection runs its after-crash check here
      const reserve = await roundTrips(() => queue.reserve(1));
      expect(reserve).toHaveLength(1);
      expect(reserve[0]).toContain('leaseq_reserve');
      const ack = await roundTrips(() => queue.ack(2, 2));
      expect(ack).toHaveLength(1);
      expect(ack[0]).toContain('leaseq_ack');
      expect((await queue.reserve(3)).map((delivery) => delivery.token)).toEqual([3]);
      expect(await tokenMark('trips')).toEqual({ next: 4, high: 1 + TOKEN_BLOCK });
      expect(await queue.ackMany(3, [1, 3, 2])).toEqual([true, true, false]);
      const stats = await queue.stats(3);
      expect(stats).toMatchObject({ ready: 0, active: 0, acks: 3, staleAcks: 1, deliveries: 3 });
    } finally {
      await engine.close();
    }
  });

  it("a batch of reserves, or of acks, is one statement (a stream frame of many consumers' calls)", async (context) => {
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    try {
      const queue = await engine.queue('frames', { visibility: 1000 });
      await queue.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
      await queue.reserve(1, { max: 1 });
      let reserved: unknown;
      const reserve = await roundTrips(async () => {
        reserved = await queue.execute(1, [build.reserve({ max: 1 }), build.reserve({ max: 2 })]);
      });
      expect(reserve).toHaveLength(1);
      expect(reserve[0]).toContain('leaseq_reserve');
      expect(reserved).toMatchObject([
        { ok: true, value: [{ id: 'b', token: 2 }] },
        {
          ok: true,
          value: [
            { id: 'c', token: 3 },
            { id: 'd', token: 4 },
          ],
        },
      ]);
      let acked: unknown;
      const ack = await roundTrips(async () => {
        acked = await queue.execute(2, [build.ackMany([2, 3]), build.ack(2), build.ack(4)]);
      });
      expect(ack).toHaveLength(1);
      expect(ack[0]).toContain('leaseq_ack');
      expect(acked).toEqual([
        { ok: true, value: [true, true] },
        { ok: true, value: [false] },
        { ok: true, value: [true] },
      ]);
    } finally {
      await engine.close();
    }
  });

  it('concurrent calls of different times merge where the queue follows its time, run at the latest; a strict queue keeps them apart', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const follow = await openEngine(url, { clockMode: 'follow' });
    try {
      const queue = await follow.queue('times', { visibility: 1000 });
      await queue.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
      await queue.reserve(1, { max: 1 });
      let reserved: unknown;
      const reserve = await roundTrips(async () => {
        reserved = await Promise.all([queue.reserve(5, { max: 1 }), queue.reserve(7, { max: 2 })]);
      });
      expect(reserve).toHaveLength(1);
      expect(reserve[0]).toContain('leaseq_reserve');
      // Both ran at 7: their leases end at 7 + 1000.
      expect(reserved).toMatchObject([
        [{ id: 'b', token: 2, deadline: 1007 }],
        [
          { id: 'c', token: 3, deadline: 1007 },
          { id: 'd', token: 4, deadline: 1007 },
        ],
      ]);
      let acked: unknown;
      const ack = await roundTrips(async () => {
        acked = await Promise.all([queue.ack(8, 2), queue.ackMany(9, [3, 4]), queue.ack(10, 1)]);
      });
      expect(ack).toHaveLength(1);
      expect(ack[0]).toContain('leaseq_ack');
      expect(acked).toEqual([true, [true, true], true]);
      expect(await queue.stats(10)).toMatchObject({ active: 0, acks: 4, deliveries: 4 });
    } finally {
      await follow.close();
    }
    const strict = await openEngine(url);
    try {
      const queue = await strict.queue('times-strict', { visibility: 1000 });
      await queue.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      const reserve = await roundTrips(async () => {
        const [early, late] = await Promise.all([
          queue.reserve(5, { max: 1 }),
          queue.reserve(7, { max: 1 }),
        ]);
        expect(early).toMatchObject([{ id: 'a', deadline: 1005 }]);
        expect(late).toMatchObject([{ id: 'b', deadline: 1007 }]);
      });
      expect(reserve.filter((text) => text.includes('leaseq_reserve'))).toHaveLength(2);
    } finally {
      await strict.close();
    }
  });

  it('the general path fences its tokens too (a reserve in a session, a batch)', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    try {
      const queue = await engine.queue('general', { visibility: 1000 });
      await queue.publishBatch(
        0,
        Array.from({ length: TOKEN_BLOCK + 3 }, (_, index) => ({ id: `j${index}` })),
      );
      const session = await queue.openSession(0);
      const first = await queue.reserve(1, { session, max: 2 });
      expect(first.map((delivery) => delivery.token)).toEqual([1, 2]);
      expect(await tokenMark('general')).toEqual({ next: 3, high: 2 + TOKEN_BLOCK });
      // Past the mark: raised again by the commit that hands the token out.
      await queue.reserve(2, { max: TOKEN_BLOCK + 1 });
      expect(await tokenMark('general')).toEqual({
        next: 4 + TOKEN_BLOCK,
        high: 3 + 2 * TOKEN_BLOCK,
      });
    } finally {
      await engine.close();
    }
  });

  it('a receive that goes on to wait learns when to look again from its reserve: one round trip, no lock of its own', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    const stop = new AbortController();
    try {
      const queue = await engine.queue('arming', { visibility: 1000 });
      const arm = queue.reserveOnReady?.bind(queue);
      if (arm === undefined) throw new Error('PostgreSQL queues wait in the engine');
      await queue.publishBatch(0, [{ id: 'a' }]);
      expect(await queue.reserve(1)).toMatchObject([{ id: 'a', token: 1, deadline: 1001 }]);
      // A reserve that does not go on to wait uses the plain function: it has no use for the time.
      const plain = await roundTrips(async () => expect(await queue.reserve(2)).toEqual([]));
      expect(plain).toHaveLength(1);
      expect(plain[0]).toContain('leaseq_reserve(');
      let waiting: ReturnType<typeof arm> | undefined;
      const sent = await roundTrips(async () => {
        waiting = arm(2, build.reserve({ max: 1 }), stop.signal);
        // The lease of 'a' is the next event: the receiver sleeps at most until then.
        expect(await waiting.armed).toBe(1001);
      });
      expect(sent).toHaveLength(1);
      expect(sent[0]).toContain('leaseq_reserve_next');
      // A publish hands its job to the waiting receiver, committed with it.
      await queue.publishBatch(3, [{ id: 'b' }]);
      expect(await waiting?.deliveries).toMatchObject([{ id: 'b', token: 2 }]);
      // Acked, the leases leave the stored bound behind them: a receiver may wake early for
      // nothing. Waking at that time, its reserve takes the general path, which finds the exact
      // next event (none), and the bound with it.
      expect(await queue.ackMany(4, [1, 2])).toEqual([true, true]);
      expect(await arm(5, build.reserve({ max: 1 }), stop.signal).armed).toBe(1001);
      expect(await engine.queue('arming').then((handle) => handle.nextEventAt())).toBeUndefined();
      expect(await arm(1001, build.reserve({ max: 1 }), stop.signal).armed).toBeUndefined();
      const after = await roundTrips(async () => {
        expect(await arm(1002, build.reserve({ max: 1 }), stop.signal).armed).toBeUndefined();
      });
      expect(after).toHaveLength(1);
    } finally {
      stop.abort();
      await engine.close();
    }
  });

  it('acks of two engines on one queue, tallied apart from its row, add up; R2 sees their time', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const [one, two] = [await openEngine(url), await openEngine(url)];
    try {
      const first = await one.queue('tallies', { visibility: 1000 });
      const second = await two.queue('tallies');
      await first.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      const [a, b, c] = await first.reserve(1, { max: 3 });
      expect(await first.ack(5, a?.token ?? 0)).toBe(true);
      expect(await second.ackMany(9, [b?.token ?? 0, 99])).toEqual([true, false]);
      // An ack's time counts for R2 before anything folds it into the queue row.
      await expect(first.reserve(8)).rejects.toMatchObject({ code: 'INVALID_CLOCK' });
      await expect(second.ack(8, c?.token ?? 0)).rejects.toMatchObject({ code: 'INVALID_CLOCK' });
      expect(await second.stats(9)).toMatchObject({
        queueTime: 9,
        ready: 0,
        active: 1,
        acks: 2,
        staleAcks: 1,
        processingTime: { count: 2, sum: 4 + 8, max: 8 },
      });
      expect(await first.ack(10, c?.token ?? 0)).toBe(true);
      expect(await first.stats(10)).toMatchObject({ active: 0, acks: 3 });
      // A deleted queue takes its tallies with it: a new one of the name starts from nothing.
      expect(await one.deleteQueue('tallies')).toBe(true);
      const again = await one.queue('tallies');
      expect(await again.stats(10)).toMatchObject({ active: 0, acks: 0, staleAcks: 0 });
    } finally {
      await one.close();
      await two.close();
    }
  });

  it('a reservation lost to a crash comes back ready with a fresh token; its old token is refused', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    const queue = await engine.queue('lost', { visibility: 1000 });
    await queue.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
    // Token 1 raises the mark (a synced commit); token 2 is within it (not synced).
    expect((await queue.reserve(1)).map((delivery) => delivery.id)).toEqual(['a']);
    const before = await admin(async (client) => ({
      job: (await client.query(`SELECT * FROM leaseq_jobs WHERE queue = 'lost' AND id = 'b'`))
        .rows[0] as Record<string, unknown>,
      queue: (await client.query(`SELECT * FROM leaseq_queues WHERE name = 'lost'`))
        .rows[0] as Record<string, unknown>,
    }));
    const [lost] = await queue.reserve(2);
    expect(lost).toMatchObject({ id: 'b', token: 2 });
    await engine.close();
    // The crash: the unflushed reservation is gone (its job and queue rows as before it), the
    // synced mark stays, and crash recovery empties the unlogged marker table.
    await admin(async (client) => {
      const job = before.job;
      await client.query(
        `UPDATE leaseq_jobs SET state = $1, token = $2, delivered_at = $3, deadline = $4,
           delivery_count = $5, ready_pos = $6 WHERE queue = 'lost' AND id = 'b'`,
        [job.state, job.token, job.delivered_at, job.deadline, job.delivery_count, job.ready_pos],
      );
      const row = before.queue;
      await client.query(
        `UPDATE leaseq_queues SET clock = $1, next_token = $2, ready_head = $3, ready_count = $4,
           active_count = $5, counters = $6, next_event_at = $7 WHERE name = 'lost'`,
        [
          row.clock,
          row.next_token,
          row.ready_head,
          row.ready_count,
          row.active_count,
          row.counters,
          row.next_event_at,
        ],
      );
      await client.query('TRUNCATE leaseq_alive');
    });
    const reopened = await openEngine(url);
    try {
      const again = await reopened.queue('lost');
      expect(await again.stats(3)).toMatchObject({ ready: 1, active: 1 });
      const [fresh] = await again.reserve(3);
      expect(fresh).toMatchObject({ id: 'b', deliveryCount: 1 });
      expect(fresh?.token).toBe(2 + TOKEN_BLOCK);
      expect(await again.ack(3, 2)).toBe(false);
      expect(await again.ack(3, fresh?.token ?? 0)).toBe(true);
      expect(await again.ack(3, 1)).toBe(true);
      expect(await again.stats(3)).toMatchObject({ ready: 0, active: 0, acks: 2, staleAcks: 1 });
    } finally {
      await reopened.close();
    }
  });
});
