import { afterEach, describe, expect, it, vi } from 'vitest';
import { openEngine } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { schemaUrl, statementsOf, usePostgresSchema } from './scaling-helpers.js';

/**
 * R12, R9: deliveries that end together (leases run out, a session ends, a nackUpTo) go back in
 * one statement on PostgreSQL, not one each: 10,000 leases that ran out together took 2.3 s,
 * every other call of the queue waiting behind its row all along (0.18 s in one statement).
 */
const REQUEUE = /^UPDATE leaseq_jobs SET state = '(ready|delayed)'/;
const COUNT = 200;

/** In a schema of its own (through search_path), as the other scaling tests. */
const SCHEMA = `leaseq_scaling_releases_${process.pid}`;
const url = schemaUrl(SCHEMA);

afterEach(() => {
  vi.restoreAllMocks();
});

describe('R12 PostgreSQL: deliveries that end together go back in one statement', () => {
  const skipReason = usePostgresSchema(SCHEMA);

  it('leases that run out, and a nackUpTo with a delay, write their jobs at once', async (context) => {
    const skip = skipReason();
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    try {
      const queue = await engine.queue('releases', { visibility: 10 });
      await queue.publishBatch(
        0,
        Array.from({ length: COUNT }, (_, n) => ({ id: `j${n}`, priority: n % 2 })),
      );
      expect(await queue.reserve(0, { max: COUNT })).toHaveLength(COUNT);
      const expired = await statementsOf(PostgresConnection, REQUEUE, async () => {
        expect(await queue.stats(10)).toMatchObject({ ready: COUNT, expiries: COUNT });
      });
      expect(expired).toHaveLength(1);
      // Each went back to the front of its priority, in token order (R12, R23).
      const again = await queue.reserve(10, { max: COUNT, visibility: 100 });
      expect(again.map((delivery) => delivery.id)).toEqual([
        ...Array.from({ length: COUNT / 2 }, (_, n) => `j${2 * n + 1}`),
        ...Array.from({ length: COUNT / 2 }, (_, n) => `j${2 * n}`),
      ]);
      expect(again.every((delivery) => delivery.deliveryCount === 2)).toBe(true);

      const session = await queue.openSession(10);
      const taken = await queue.reserve(20, { max: COUNT, session, visibility: 100 });
      expect(taken).toHaveLength(0);
      await queue.ackMany(
        20,
        again.map((delivery) => delivery.token),
      );
      await queue.publishBatch(
        20,
        Array.from({ length: COUNT }, (_, n) => ({ id: `k${n}` })),
      );
      const held = await queue.reserve(20, { max: COUNT, session, visibility: 100 });
      const delayed = await statementsOf(PostgresConnection, REQUEUE, async () => {
        expect(await queue.nackUpTo(21, session, held.at(-1)?.token as number, { delay: 5 })).toBe(
          COUNT,
        );
      });
      expect(delayed).toHaveLength(1);
      expect(await queue.job('k0')).toMatchObject({
        state: 'delayed',
        availableAt: 26,
        deliveryCount: 1,
        history: [{ outcome: 'requeued' }],
      });
    } finally {
      await engine.close();
    }
  });
});
