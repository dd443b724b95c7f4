import { Socket } from 'node:net';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { openEngine } from '../../src/engine/index.js';
import { POSTGRES_URL, postgresSkipReason, withPostgresClient } from '../crash/postgres.js';

/**
 * Receivers of one process hear other processes' publishes over a connection of its own
 * (LISTEN). PostgreSQL restarting, or the backend ending, loses it: it is opened again when a
 * receiver next waits, so wake-ups come back instead of stopping for good.
 */
const APP = `leaseq_wakes_${process.pid}`;
const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}application_name=${APP}`;
let skip: string | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
});

/** The backends of this test's engine that listen for wake-ups. */
async function listeners(): Promise<number[]> {
  return withPostgresClient(async (client) => {
    const { rows } = await client.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN %'`,
      [APP],
    );
    return rows.map((row) => row.pid);
  });
}

async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('PostgreSQL: wake-ups from other processes', () => {
  it('come back after the listening connection is lost: a receiver that waits opens it again', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const clock = new ManualClock(1_000);
    const here = new EngineBroker(await openEngine(url), { clock });
    const elsewhere = await openEngine(POSTGRES_URL);
    const name = `wakes-${process.pid}`;
    const stop = new AbortController();
    try {
      const queue = await here.queue(name);
      const other = await elsewhere.queue(name);
      const [lost] = await listeners();
      expect(lost).toBeDefined();
      await withPostgresClient((client) => client.query('SELECT pg_terminate_backend($1)', [lost]));
      await until(async () => (await listeners()).length === 0);
      const receiving = queue.receive({ wait: 20_000, signal: stop.signal });
      await until(async () => clock.waiting > 0 && (await listeners()).length === 1);
      await other.publish(clock.now(), { id: 'from-elsewhere' });
      // Woken by the notification: the manual clock never moves, so its wait never ends.
      expect(await receiving).toMatchObject([{ id: 'from-elsewhere', token: 1 }]);
    } finally {
      stop.abort();
      await here.deleteQueue(name).catch(() => undefined);
      await here.close();
      await elsewhere.close();
    }
  });

  for (const [label, how] of [
    ['acked', 'ack'],
    ['cancelled (delayed)', 'cancel'],
    ['moved away (delayed)', 'moveJobs'],
  ] as const) {
    it(`wake receivers elsewhere when a group's head is ${label} and its next member goes on (R24)`, async (context) => {
      if (skip !== undefined) context.skip(skip);
      const clock = new ManualClock(1_000);
      const here = new EngineBroker(await openEngine(url), { clock });
      const elsewhere = await openEngine(POSTGRES_URL);
      const name = `group-wakes-${how}-${process.pid}`;
      const stop = new AbortController();
      try {
        const queue = await here.queue(name);
        const other = await elsewhere.queue(name);
        if (how === 'moveJobs') await elsewhere.queue(`${name}-to`);
        const now = clock.now();
        await other.publishBatch(now, [
          // Delayed, but for the ack: the group waits on it, and the receive below waits too.
          { id: 'a1', group: 'g', ...(how === 'ack' ? {} : { delay: 60_000 }) },
          { id: 'a2', group: 'g' },
        ]);
        const [head] = how === 'ack' ? await other.reserve(now) : [];
        const receiving = queue.receive({ wait: 20_000, signal: stop.signal });
        await until(async () => clock.waiting > 0 && (await listeners()).length === 1);
        if (how === 'ack') await other.ack(now, head?.token as number);
        else if (how === 'cancel') await other.cancel(now, 'a1');
        else await other.moveJobs(now, { to: `${name}-to`, ids: ['a1'] });
        const bound = new Promise<'not woken'>((resolve) => {
          setTimeout(() => resolve('not woken'), 5_000).unref();
        });
        // Woken by the notification: the manual clock never moves, so its wait never ends.
        const deliveries = await Promise.race([receiving, bound]);
        expect(deliveries).not.toBe('not woken');
        expect(deliveries).toMatchObject([{ id: 'a2' }]);
      } finally {
        stop.abort();
        await here.deleteQueue(name).catch(() => undefined);
        await here.deleteQueue(`${name}-to`).catch(() => undefined);
        await here.close();
        await elsewhere.close();
      }
    });
  }

  for (const [label, how] of [
    ['an ack', 'ack'],
    ['a cancel', 'cancel'],
  ] as const) {
    it(`wake receivers elsewhere when ${label} frees room under the queue's prefetch`, async (context) => {
      if (skip !== undefined) context.skip(skip);
      const clock = new ManualClock(1_000);
      const here = new EngineBroker(await openEngine(url), { clock });
      const elsewhere = await openEngine(POSTGRES_URL);
      const name = `prefetch-wakes-${how}-${process.pid}`;
      const stop = new AbortController();
      try {
        const queue = await here.queue(name, { prefetch: 1 });
        const other = await elsewhere.queue(name);
        const now = clock.now();
        await other.publishBatch(now, [{ id: 'a' }, { id: 'b' }]);
        const [held] = await other.reserve(now);
        // 'b' is ready, but the prefetch is full: this receive waits for room.
        const receiving = queue.receive({ wait: 20_000, signal: stop.signal });
        await until(async () => clock.waiting > 0 && (await listeners()).length === 1);
        if (how === 'ack') await other.ack(now, held?.token as number);
        else await other.cancel(now, 'a');
        const bound = new Promise<'not woken'>((resolve) => {
          setTimeout(() => resolve('not woken'), 5_000).unref();
        });
        const deliveries = await Promise.race([receiving, bound]);
        expect(deliveries).not.toBe('not woken');
        expect(deliveries).toMatchObject([{ id: 'b' }]);
      } finally {
        stop.abort();
        await here.deleteQueue(name).catch(() => undefined);
        await here.close();
        await elsewhere.close();
      }
    });
  }

  it("keep their connection, and the pool's, open through a NAT: TCP keepalive after 10 s of silence", async (context) => {
    if (skip !== undefined) context.skip(skip);
    const keepAlive = vi.spyOn(Socket.prototype, 'setKeepAlive');
    const engine = await openEngine(url);
    try {
      await engine.queue(`keepalive-${process.pid}`);
      // The listener and the pool's connections: every one the engine made.
      const made = (await listeners()).length + 1;
      expect(keepAlive.mock.calls.length).toBeGreaterThanOrEqual(made);
      for (const call of keepAlive.mock.calls) expect(call).toEqual([true, 10_000]);
    } finally {
      keepAlive.mockRestore();
      await engine.close();
    }
  });
});
