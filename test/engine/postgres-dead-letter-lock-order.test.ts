import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { QueueHandle } from '../../src/engine/engine.js';
import { uniqueQueueName } from '../crash/postgres.js';
import { deadlocksDuring, lockWaiters, postgresProcesses } from './postgres-processes.js';

/**
 * R26 on PostgreSQL: a batch holding calls of several queues takes, with their locks, those of
 * their dead-letter queues, in the order every process takes them. A job dying in one of its
 * queues (a nack to the dead letters, a publish past `maxLength` dropping the oldest) took its
 * dead-letter queue's lock only then, after the batch's other queues: holding a queue that
 * sorts after the dead-letter queue, it waited for that one, while a batch of another process
 * held the dead-letter queue and waited for the queue it held. PostgreSQL broke the cycle
 * after deadlock_timeout by rolling one back.
 *
 * Each engine here is another process's: its own pool of connections. A plain client holds
 * the locks of the dead-letter queue and of the queue both batches publish into until both
 * batches wait, then lets them go at once; the deadlocks the engines' statements meet are
 * counted where the driver answers them.
 */
const processes = postgresProcesses({ clockMode: 'follow' });
const { client, engine, holdQueues, names } = processes;

/** The transaction that last wrote each job of `queues`, by id. */
async function writers(observer: pg.Client, queues: readonly string[]) {
  const { rows } = await observer.query<{ id: string; xmin: string }>(
    'SELECT id, xmin::text AS xmin FROM leaseq_jobs WHERE queue = ANY($1) ORDER BY id',
    [queues],
  );
  return new Map(rows.map((row) => [row.id, row.xmin]));
}

describe('PostgreSQL: a batch of several queues takes the lock of the dead-letter queue a job of theirs dies into with theirs', () => {
  const cases: {
    label: string;
    options: Record<string, unknown>;
    /** Readies the job that dies; the call it dies at, made by the batch. */
    dies: (queue: QueueHandle) => Promise<() => Promise<unknown>>;
  }[] = [
    {
      label: 'a nack to the dead letters',
      options: {},
      dies: async (queue) => {
        await queue.publish(1, { id: 'dies' });
        const [delivery] = await queue.reserve(1);
        return () => queue.nack(2, delivery?.token ?? 0, { requeue: false });
      },
    },
    {
      label: 'a publish past maxLength dropping the oldest',
      options: { maxLength: 1, overflow: 'dead-letter-oldest' },
      dies: async (queue) => {
        await queue.publish(1, { id: 'dies' });
        return () => queue.publish(2, { id: 'pushes' });
      },
    },
  ];
  for (const { label, options, dies } of cases) {
    it(`R26 ${label} in a batch that also publishes into a queue named after the dead-letter queue: no deadlock`, {
      timeout: 20_000,
    }, async (context) => {
      if (processes.skip !== undefined) context.skip(processes.skip);
      // By name: the source, its dead-letter queue, the other queue both batches publish into.
      const source = uniqueQueueName('dlq-order-a-source');
      const dead = uniqueQueueName('dlq-order-d-dead');
      const other = uniqueQueueName('dlq-order-z-other');
      names.push(source, dead, other);
      const one = await engine();
      const two = await engine();
      const observer = await client();
      await one.queue(dead);
      const oneSource = await one.queue(source, { deadLetterQueue: dead, ...options });
      const oneOther = await one.queue(other);
      const dying = await dies(oneSource);
      const [twoDead, twoOther] = [await two.queue(dead), await two.queue(other)];
      const deadlocks = await deadlocksDuring([source, dead, other], async () => {
        const release = await holdQueues([dead, other]);
        // Each engine's two calls, made in one turn of the event loop, are one transaction.
        const twos = Promise.all([
          twoDead.publish(2, { id: 'two-dead' }),
          twoOther.publish(2, { id: 'two-other' }),
        ]);
        await lockWaiters(observer, 1);
        // The job dies into the dead-letter queue, which the other batch takes first.
        const ones = Promise.all([dying(), oneOther.publish(2, { id: 'one-other' })]);
        await lockWaiters(observer, 2);
        await release();
        await Promise.all([twos, ones]);
      });
      expect(deadlocks).toBe(0);
      const transactionOf = await writers(observer, [dead, other]);
      expect([...transactionOf.keys()]).toEqual(['dies', 'one-other', 'two-dead', 'two-other']);
      // Neither batch was rolled back and run again call by call: each committed as one.
      expect(transactionOf.get('dies')).toBe(transactionOf.get('one-other'));
      expect(transactionOf.get('two-dead')).toBe(transactionOf.get('two-other'));
      expect((await twoDead.inspect()).ready).toEqual(['two-dead', 'dies']);
    });
  }
});
