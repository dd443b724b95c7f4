import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import type { QueueOptions } from '../../src/core/index.js';
import { openEngine } from '../../src/engine/index.js';
import { deadlocksDuring, lockWaiters } from './postgres-processes.js';
import { scratchDatabasesOfFile } from './postgres-scratch.js';

/**
 * R25 with R26 on PostgreSQL: a scheduler pass publishing the occurrences of several queues in
 * one transaction takes their locks, and those of their dead-letter queues, up front in the
 * order a batch of calls of several queues takes them. It took its queues' locks by name
 * alone, and a dead-letter queue's only as a job died into it: holding a queue that a batch of
 * another process wanted next, it waited for one that batch held, and PostgreSQL broke the
 * cycle after deadlock_timeout by rolling one back.
 *
 * A database of the file's own: a pass lists the schedules of every queue. Each broker stands
 * for another process (its own engine, its own pool). A plain client holds the locks the two
 * transactions meet on until both wait, then lets them go at once; the deadlocks the engines'
 * statements meet are counted where the driver answers them.
 */
const databases = scratchDatabasesOfFile('schedule_lock_order');

const T0 = Date.UTC(2026, 11, 6, 12);

describe('PostgreSQL: a scheduler pass over several queues takes their locks in the order batches take them', () => {
  const cases: {
    label: string;
    /** The scheduled queues, made by the first process, each with its options. */
    scheduled: [string, QueueOptions][];
    /** The queues the other process publishes into in one batch. */
    batch: string[];
    /** The queues the plain client holds at first. */
    held: string[];
    /** Jobs published before the pass (the first scheduled queue). */
    before: number;
  }[] = [
    {
      // Both queues sort after the dead-letter queue: by name alone the pass took the other
      // queue first, then the dead-letter queue as the publish past maxLength dropped a job.
      label:
        'a publish past maxLength dropping the oldest into a dead-letter queue the batch holds',
      scheduled: [
        ['a-source', { deadLetterQueue: 'd-dead', maxLength: 1, overflow: 'dead-letter-oldest' }],
        ['z-other', {}],
      ],
      batch: ['d-dead', 'z-other'],
      held: ['d-dead', 'z-other'],
      before: 1,
    },
    {
      // A queue with a dead-letter queue is taken before one without, whatever their names.
      label: 'a queue with a dead-letter queue named after one without',
      scheduled: [
        ['b-source', { deadLetterQueue: 'd-dead' }],
        ['a-plain', {}],
      ],
      batch: ['a-plain', 'b-source'],
      held: ['a-plain', 'b-source'],
      before: 0,
    },
  ];
  for (const { label, scheduled, batch, held, before } of cases) {
    it(`R25 ${label}: no deadlock, each transaction commits whole`, {
      timeout: 20_000,
    }, async (context) => {
      const skip = databases.skip();
      if (skip !== undefined) context.skip(skip);
      const url = (await databases.make()).url();
      const clock = new ManualClock(T0);
      const one = new EngineBroker(await openEngine(url), { clock });
      const two = new EngineBroker(await openEngine(url), { clock });
      const clients: pg.Client[] = [];
      const client = async () => {
        const opened = new pg.Client({ connectionString: url });
        await opened.connect();
        clients.push(opened);
        return opened;
      };
      try {
        await one.queue('d-dead');
        for (const [name, options] of scheduled) {
          const queue = await one.queue(name, options);
          await queue.schedule('tick', 1_000);
        }
        const first = await one.queue(scheduled[0]?.[0] ?? '');
        for (let index = 0; index < before; index += 1) await first.publish({ id: `old-${index}` });
        const batchQueues = await Promise.all(batch.map((name) => two.queue(name)));
        clock.advance(1_000);
        const observer = await client();
        const holder = await client();
        const scheduler = one.scheduler();
        let published: string[] = [];
        const deadlocks = await deadlocksDuring([...held, ...batch], async () => {
          await holder.query('BEGIN');
          for (const name of held) {
            await holder.query('SELECT pg_advisory_xact_lock(744503, hashtext($1))', [name]);
          }
          // The batch's calls, made in one turn of the event loop, are one transaction.
          const batchDone = Promise.all(
            batchQueues.map((queue, index) => queue.publish({ id: `batch-${batch[index]}` })),
          );
          await lockWaiters(observer, 1);
          const pass = scheduler.runOnce();
          await lockWaiters(observer, 2);
          await holder.query('COMMIT');
          await batchDone;
          published = (await pass).map((occurrence) => occurrence.queue).sort();
        });
        expect(deadlocks).toBe(0);
        expect(published).toEqual(scheduled.map(([name]) => name).sort());
        // The jobs one transaction wrote carry its id: each committed as one.
        const { rows } = await observer.query<{ id: string; queue: string; xmin: string }>(
          'SELECT id, queue, xmin::text AS xmin FROM leaseq_jobs',
        );
        const batchWriters = new Set(
          rows.filter((row) => row.id.startsWith('batch-')).map((row) => row.xmin),
        );
        const passWriters = new Set(
          rows.filter((row) => row.id.startsWith('tick@')).map((row) => row.xmin),
        );
        expect(batchWriters.size).toBe(1);
        expect(passWriters.size).toBe(1);
      } finally {
        for (const opened of clients) {
          await opened.query('ROLLBACK').catch(() => undefined);
          await opened.end();
        }
        await one.close();
        await two.close();
      }
    });
  }
});
