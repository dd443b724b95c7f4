import { beforeAll, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { type Engine, openEngine } from '../../src/engine/index.js';
import {
  listeningBackends,
  POSTGRES_URL,
  postgresSkipReason,
  uniqueQueueName,
} from '../crash/postgres.js';
import { until } from '../until.js';

/**
 * A queue's own prefetch bounds its active deliveries across every process. An ack that frees
 * room under it must wake receivers waiting in other processes, also when the acking process
 * reached the queue by `handle()` alone, as a server does, and so never opened it: its
 * reservations and acks take the one-statement path, which reads no options.
 */
const APP = `leaseq_prefetch_wakes_${process.pid}`;
const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}application_name=${APP}`;
let skip: string | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
});

describe('PostgreSQL: room under a queue prefetch wakes receives in other processes', () => {
  it('an ack through a process that reached the queue only by handle lets the waiting receive take the next job', async (context) => {
    if (skip !== undefined) context.skip(skip);
    // This process's clock never moves: only a wake-up ends the receive's wait.
    const clock = new ManualClock(1_000);
    const here = new EngineBroker(await openEngine(url), { clock });
    const elsewhere: Engine = await openEngine(POSTGRES_URL);
    const name = uniqueQueueName('prefetch-wakes');
    const stop = new AbortController();
    try {
      const queue = await here.queue(name, { prefetch: 1 });
      await queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
      const other = elsewhere.handle(name);
      const now = clock.now();
      const [held] = await other.reserve(now);
      expect(held?.id).toBe('a');
      const receiving = queue.receive({ wait: 20_000, signal: stop.signal });
      await until(async () => clock.waiting > 0 && (await listeningBackends(APP)).length === 1, {
        what: 'the receive to wait, with one listener',
        timeout: 30_000,
      });
      expect(await other.ack(now, held?.token as number)).toBe(true);
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

  it('an ack through a process that read the queue before its prefetch was set lets the waiting receive take the next job', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const clock = new ManualClock(1_000);
    const here = new EngineBroker(await openEngine(url), { clock });
    const elsewhere: Engine = await openEngine(POSTGRES_URL);
    const name = uniqueQueueName('prefetch-set-later');
    const stop = new AbortController();
    try {
      const queue = await here.queue(name);
      // The other process opens the queue while it bounds nothing, then another sets a prefetch.
      const other = await elsewhere.queue(name);
      await here.updateQueue(name, { prefetch: 1 });
      await queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
      const now = clock.now();
      const [held] = await other.reserve(now);
      expect(held?.id).toBe('a');
      const receiving = queue.receive({ wait: 20_000, signal: stop.signal });
      await until(async () => clock.waiting > 0 && (await listeningBackends(APP)).length === 1, {
        what: 'the receive to wait, with one listener',
        timeout: 30_000,
      });
      expect(await other.ack(now, held?.token as number)).toBe(true);
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
});
