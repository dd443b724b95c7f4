import { beforeAll, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { type Engine, openEngine, type QueueHandle } from '../../src/engine/index.js';
import {
  listeningBackends,
  POSTGRES_URL,
  postgresSkipReason,
  uniqueQueueName,
} from '../crash/postgres.js';
import { until } from '../until.js';

/**
 * A session's prefetch (R16) bounds only its own deliveries, and its receives may wait in one
 * process while its deliveries are settled in another: a client over HTTP behind a load
 * balancer receives through one server and acks through the next. Room freed under the
 * session's prefetch must wake its receive there, as room under the queue's prefetch does,
 * not leave it waiting out its wait while jobs are ready.
 */
const APP = `leaseq_session_wakes_${process.pid}`;
const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}application_name=${APP}`;
let skip: string | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
});

type Settle = (other: QueueHandle, now: number, session: string, token: number) => Promise<unknown>;

/**
 * Jobs a and b are ready; a session of prefetch 1 holds a, taken in another process; a receive
 * of the session waits in this process, whose manual clock never moves (only a wake-up ends
 * it). `settle` ends a's delivery in the other process. What the receive got within 5 s, or
 * 'not woken'.
 */
async function receivedAfter(settle: Settle): Promise<unknown> {
  const clock = new ManualClock(1_000);
  const here = new EngineBroker(await openEngine(url), { clock });
  const elsewhere: Engine = await openEngine(POSTGRES_URL);
  const name = uniqueQueueName('session-wakes');
  const stop = new AbortController();
  try {
    const queue = await here.queue(name);
    const other = await elsewhere.queue(name);
    const now = clock.now();
    await other.publishBatch(now, [{ id: 'a' }, { id: 'b' }]);
    const session = await other.openSession(now, { prefetch: 1, timeout: 600_000 });
    const [held] = await other.reserve(now, { session });
    expect(held?.id).toBe('a');
    const receiving = queue.receive({ session, wait: 20_000, signal: stop.signal });
    await until(async () => clock.waiting > 0 && (await listeningBackends(APP)).length === 1, {
      what: 'the receive to wait, with one listener',
      timeout: 30_000,
    });
    await settle(other, now, session, held?.token as number);
    const bound = new Promise<'not woken'>((resolve) => {
      setTimeout(() => resolve('not woken'), 5_000).unref();
    });
    return await Promise.race([receiving, bound]);
  } finally {
    stop.abort();
    await here.deleteQueue(name).catch(() => undefined);
    await here.close();
    await elsewhere.close();
  }
}

describe('PostgreSQL: room under a session prefetch wakes its receive in another process', () => {
  const settles: [string, Settle][] = [
    ['an ack of the held delivery', (other, now, _session, token) => other.ack(now, token)],
    [
      'an ackUpTo over the held delivery',
      (other, now, session, token) => other.ackUpTo(now, session, token),
    ],
    [
      'a reject that dead-letters the held delivery',
      (other, now, _session, token) => other.reject(now, token, { requeue: false }),
    ],
    ...[false, true].map((remove): [string, Settle] => [
      `R28 a cancel with remove ${remove} of the held job`,
      async (other, now) => expect(await other.cancel(now, 'a', { remove })).toBe(true),
    ]),
  ];
  for (const [label, settle] of settles) {
    it(`${label} lets the waiting receive take the next job`, async (context) => {
      if (skip !== undefined) context.skip(skip);
      const deliveries = await receivedAfter(settle);
      expect(deliveries).not.toBe('not woken');
      expect(deliveries).toMatchObject([{ id: 'b' }]);
    });
  }
});
