import { beforeAll, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { type Engine, openEngine } from '../../src/engine/index.js';
import {
  listeningBackends,
  POSTGRES_URL,
  postgresSkipReason,
  uniqueQueueName,
} from '../crash/postgres.js';

/**
 * R28: cancelling an active job frees its session's prefetch room (R16). A receive of that
 * session waiting in another process must hear of it, as it does of an ack, and take the next
 * ready job rather than wait out its wait.
 */
const APP = `leaseq_session_cancel_wakes_${process.pid}`;
const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}application_name=${APP}`;
let skip: string | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
});

async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('PostgreSQL: a cancel that frees session prefetch room wakes its receive elsewhere', () => {
  for (const remove of [false, true]) {
    it(`R28 R16 cancel with remove ${remove} lets the waiting receive take the next job`, async (context) => {
      if (skip !== undefined) context.skip(skip);
      const clock = new ManualClock(1_000);
      const here = new EngineBroker(await openEngine(url), { clock });
      const elsewhere: Engine = await openEngine(POSTGRES_URL);
      const name = uniqueQueueName('session-cancel-wakes');
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
        await until(async () => clock.waiting > 0 && (await listeningBackends(APP)).length === 1);
        expect(await other.cancel(now, 'a', { remove })).toBe(true);
        const bound = new Promise<'not woken'>((resolve) => {
          setTimeout(() => resolve('not woken'), 5_000).unref();
        });
        expect(await Promise.race([receiving, bound])).toMatchObject([{ id: 'b' }]);
      } finally {
        stop.abort();
        await here.deleteQueue(name).catch(() => undefined);
        await here.close();
        await elsewhere.close();
      }
    });
  }
});
