import { Socket } from 'node:net';
import pg from 'pg';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { NotFoundError, type QueueOptions } from '../../src/core/index.js';
import { type Engine, openEngine, type QueueHandle } from '../../src/engine/index.js';
import {
  listeningBackends,
  POSTGRES_URL,
  postgresSkipReason,
  withPostgresClient,
} from '../crash/postgres.js';
import { until } from '../until.js';

/**
 * Receivers of one process hear other processes' publishes over a connection of its own
 * (LISTEN). PostgreSQL restarting, or the backend ending, loses it: it is opened again at once
 * while receivers wait (they then look, having missed what was notified meanwhile), else when a
 * receiver next waits, so wake-ups come back instead of stopping for good.
 */
const APP = `leaseq_wakes_${process.pid}`;
const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}application_name=${APP}`;
let skip: string | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
});

/** The backends of this test's engine that listen for wake-ups. */
const listeners = () => listeningBackends(APP);

/** Another process's engine and its handle of the queue. */
interface Elsewhere {
  engine: Engine;
  queue: QueueHandle;
}

/**
 * A receive waits on queue `name` (made with `options`) in this process, whose manual clock
 * never moves: only a wake-up ends it. `prepare` readies the queue in another process and
 * returns what that process then does. What the receive got within 5 s, or 'not woken'. The
 * queue, and `name`-to if made, are deleted after.
 */
async function receivedElsewhere(
  name: string,
  options: QueueOptions,
  prepare: (other: Elsewhere, now: number) => Promise<() => Promise<unknown>>,
): Promise<unknown> {
  const clock = new ManualClock(1_000);
  const here = new EngineBroker(await openEngine(url), { clock });
  const engine = await openEngine(POSTGRES_URL);
  const stop = new AbortController();
  try {
    const queue = await here.queue(name, options);
    const act = await prepare({ engine, queue: await engine.queue(name) }, clock.now());
    const receiving = queue.receive({ wait: 20_000, signal: stop.signal });
    // Taken as handled at once: a delete elsewhere may end it (NOT_FOUND) before act() returns.
    receiving.catch(() => undefined);
    await until(async () => clock.waiting > 0 && (await listeners()).length === 1, {
      what: 'the receive to wait, with one listener',
      timeout: 30_000,
    });
    await act();
    const bound = new Promise<'not woken'>((resolve) => {
      setTimeout(() => resolve('not woken'), 5_000).unref();
    });
    return await Promise.race([receiving, bound]);
  } finally {
    stop.abort();
    for (const made of [name, `${name}-to`]) await here.deleteQueue(made).catch(() => undefined);
    await here.close();
    await engine.close();
  }
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
      await until(async () => (await listeners()).length === 0, {
        what: 'no listener',
        timeout: 30_000,
      });
      const receiving = queue.receive({ wait: 20_000, signal: stop.signal });
      await until(async () => clock.waiting > 0 && (await listeners()).length === 1, {
        what: 'the receive to wait, with one listener',
        timeout: 30_000,
      });
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

  it('lost while a receiver waits: opened again at once, the receiver takes what was published meanwhile without waiting out its wait', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const clock = new ManualClock(1_000);
    const here = new EngineBroker(await openEngine(url), { clock });
    const elsewhere = await openEngine(POSTGRES_URL);
    const name = `wakes-lost-${process.pid}`;
    try {
      const queue = await here.queue(name);
      const other = await elsewhere.queue(name);
      const receiving = queue.receive({ wait: 5_000 });
      await until(async () => clock.waiting > 0 && (await listeners()).length === 1, {
        what: 'the receive to wait, with one listener',
        timeout: 30_000,
      });
      const [lost] = await listeners();
      await withPostgresClient((client) => client.query('SELECT pg_terminate_backend($1)', [lost]));
      await until(async () => (await listeners()).length === 0, {
        what: 'no listener',
        timeout: 30_000,
      });
      // Published while this process may not hear it; the manual clock never moves, so only a
      // wake-up (the notification, or the look owed once the listener is back) ends the wait.
      await other.publish(clock.now(), { id: 'unheard' });
      const bound = new Promise<'not woken'>((resolve) => {
        setTimeout(() => resolve('not woken'), 5_000).unref();
      });
      expect(await Promise.race([receiving, bound])).toMatchObject([{ id: 'unheard', token: 1 }]);
      await until(async () => (await listeners()).length === 1, {
        what: 'one listener',
        timeout: 30_000,
      });
    } finally {
      await here.deleteQueue(name).catch(() => undefined);
      await here.close();
      await elsewhere.close();
    }
  });

  it('wake receivers elsewhere when their queue is deleted: NOT_FOUND at once, not at the end of the wait', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const name = `wakes-deleted-${process.pid}`;
    const received = await receivedElsewhere(name, {}, async (other) => async () => {
      await other.engine.deleteQueue(name);
    }).catch((error: unknown) => error);
    expect(received).toBeInstanceOf(NotFoundError);
  });

  for (const [label, how] of [
    ['acked', 'ack'],
    ['cancelled (delayed)', 'cancel'],
    ['moved away (delayed)', 'moveJobs'],
  ] as const) {
    it(`wake receivers elsewhere when a group's head is ${label} and its next member goes on (R24)`, async (context) => {
      if (skip !== undefined) context.skip(skip);
      const name = `group-wakes-${how}-${process.pid}`;
      const deliveries = await receivedElsewhere(name, {}, async (other, now) => {
        if (how === 'moveJobs') await other.engine.queue(`${name}-to`);
        await other.queue.publishBatch(now, [
          // Delayed, but for the ack: the group waits on it, and the receive waits too.
          { id: 'a1', group: 'g', ...(how === 'ack' ? {} : { delay: 60_000 }) },
          { id: 'a2', group: 'g' },
        ]);
        const [head] = how === 'ack' ? await other.queue.reserve(now) : [];
        if (how === 'ack') return () => other.queue.ack(now, head?.token as number);
        if (how === 'cancel') return () => other.queue.cancel(now, 'a1');
        return () => other.queue.moveJobs(now, { to: `${name}-to`, ids: ['a1'] });
      });
      expect(deliveries).not.toBe('not woken');
      expect(deliveries).toMatchObject([{ id: 'a2' }]);
    });
  }

  for (const [label, how] of [
    ['an ack', 'ack'],
    ['a cancel', 'cancel'],
  ] as const) {
    it(`wake receivers elsewhere when ${label} frees room under the queue's prefetch`, async (context) => {
      if (skip !== undefined) context.skip(skip);
      const name = `prefetch-wakes-${how}-${process.pid}`;
      const deliveries = await receivedElsewhere(name, { prefetch: 1 }, async (other, now) => {
        await other.queue.publishBatch(now, [{ id: 'a' }, { id: 'b' }]);
        // 'b' is ready, but the prefetch is full: the receive waits for room.
        const [held] = await other.queue.reserve(now);
        if (how === 'ack') return () => other.queue.ack(now, held?.token as number);
        return () => other.queue.cancel(now, 'a');
      });
      expect(deliveries).not.toBe('not woken');
      expect(deliveries).toMatchObject([{ id: 'b' }]);
    });
  }

  it('lost while new connections are refused: receivers that begin to wait make no attempt of their own, the backoff spaces them', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const here = new EngineBroker(await openEngine(url));
    const name = `wakes-refused-${process.pid}`;
    const attempts: number[] = [];
    let refusing = false;
    const connect = pg.Client.prototype.connect;
    const spy = vi.spyOn(pg.Client.prototype, 'connect').mockImplementation(function (
      this: pg.Client,
      ...args: unknown[]
    ) {
      // Only this engine's (the test's own clients go through).
      const app = (this as unknown as { connectionParameters?: { application_name?: string } })
        .connectionParameters?.application_name;
      if (!refusing || app !== APP) {
        return (connect as (...a: unknown[]) => Promise<void>).apply(this, args);
      }
      attempts.push(performance.now());
      return Promise.reject(new Error('sorry, too many clients already'));
    } as typeof connect);
    try {
      const queue = await here.queue(name);
      // The pool's connection is open; receivers wait again and again, as workers do.
      await queue.publish({ id: 'warm' });
      await queue.receive();
      refusing = true;
      const [lost] = await listeners();
      await withPostgresClient((client) => client.query('SELECT pg_terminate_backend($1)', [lost]));
      await until(async () => (await listeners()).length === 0, {
        what: 'no listener',
        timeout: 30_000,
      });
      const started = performance.now();
      while (performance.now() - started < 1_500) await queue.receive({ wait: 20 });
      // 0.1 s, then doubling: a handful in 1.5 s, not one per wait.
      expect(attempts.length).toBeGreaterThanOrEqual(1);
      expect(attempts.length).toBeLessThanOrEqual(5);
      // Let through again: the listener is back within the backoff, receivers as before.
      refusing = false;
      const receiving = queue.receive({ wait: 10_000 });
      await until(async () => (await listeners()).length === 1, {
        what: 'one listener',
        timeout: 30_000,
      });
      await queue.publish({ id: 'after' });
      expect((await receiving).map((delivery) => delivery.id)).toEqual(['after']);
    } finally {
      spy.mockRestore();
      await here.deleteQueue(name).catch(() => undefined);
      await here.close();
    }
  });

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
