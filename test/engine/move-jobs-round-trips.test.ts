import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { PublishInput } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { MOVE_CHUNK } from '../../src/engine/sql/queue-ops.js';
import { POSTGRES_URL } from '../crash/postgres.js';
import { postgresEngineForFile } from './postgres-engine-for-file.js';
import { roundTrips } from './round-trips.js';

/**
 * R26: on PostgreSQL every statement is a round trip, and moveJobs (the operators' bulk move,
 * SQS's StartMessageMoveTask) made a few per job: 200,000 jobs moved in over 4 minutes, with
 * every queue of the engine waiting. Its statements are per chunk of MOVE_CHUNK jobs: the
 * look-ups, the moves, the members that went on in their groups.
 */
const postgres = postgresEngineForFile('move-trips');
const name = postgres.name;

async function publishAll(queue: QueueHandle, jobs: PublishInput[]): Promise<void> {
  for (let start = 0; start < jobs.length; start += 1000) {
    await queue.publishBatch(0, jobs.slice(start, start + 1000));
  }
}

/** Ungrouped jobs, a group longer than a chunk, and groups of one (SQS FIFO's usual case). */
const JOBS: PublishInput[] = [
  ...Array.from({ length: 3 * MOVE_CHUNK }, (_, n) => ({ id: `j${n}` })),
  ...Array.from({ length: MOVE_CHUNK + 5 }, (_, n) => ({ id: `g${n}`, group: 'g' })),
  ...Array.from({ length: 200 }, (_, n) => ({ id: `one${n}`, group: `one${n}`, delay: n % 2 })),
];

describe('PostgreSQL: moveJobs costs statements per chunk of jobs, not per job', () => {
  it('R26 R24 moving thousands of jobs, a long group among them, to another queue', async (context) => {
    const { engine } = postgres;
    if (engine === undefined) return context.skip(postgres.skip);
    const from = name('from');
    const to = name('to');
    const source = await engine.queue(from);
    const target = await engine.queue(to);
    try {
      await publishAll(source, JOBS);
      const sent = await roundTrips(async () => {
        expect(await source.moveJobs(1, { to })).toBe(JOBS.length);
      });
      expect(sent.length).toBeLessThan(100);
      expect(await target.stats(1)).toMatchObject({ ready: JOBS.length - MOVE_CHUNK - 4 });
      expect(await source.stats(1)).toMatchObject({ ready: 0, delayed: 0, waiting: 0 });
    } finally {
      await engine.deleteQueue(from);
      await engine.deleteQueue(to);
    }
  });

  it('R26 moving thousands of jobs named by id', async (context) => {
    const { engine } = postgres;
    if (engine === undefined) return context.skip(postgres.skip);
    const from = name('named-from');
    const to = name('named-to');
    const source = await engine.queue(from);
    await engine.queue(to);
    try {
      await publishAll(source, JOBS);
      const ids = JOBS.map((job) => job.id as string).reverse();
      const sent = await roundTrips(async () => {
        expect(await source.moveJobs(1, { ids, to })).toBe(JOBS.length);
      });
      expect(sent.length).toBeLessThan(100);
    } finally {
      await engine.deleteQueue(from);
      await engine.deleteQueue(to);
    }
  });
});

describe('PostgreSQL: moveJobs locks only the queues it moves jobs into', () => {
  it('R26 a move with max is not held up by a lock on the origin of a job past max', async (context) => {
    const { engine } = postgres;
    if (engine === undefined) return context.skip(postgres.skip);
    const dlq = name('dlq');
    const a = name('a');
    const b = name('b');
    await engine.queue(dlq);
    const origins = [
      await engine.queue(a, { deadLetterQueue: dlq }),
      await engine.queue(b, { deadLetterQueue: dlq }),
    ];
    const holder = new pg.Client({ connectionString: POSTGRES_URL });
    await holder.connect();
    try {
      // x1 dies in a, x2 in b: the dead-letter queue holds x1 then x2, each with its origin.
      for (const [index, origin] of origins.entries()) {
        await origin.publish(0, { id: `x${index + 1}` });
        const [delivery] = await origin.reserve(1);
        expect(await origin.nack(2, delivery?.token ?? 0, { requeue: false })).toBe(true);
      }
      // Another transaction holds b's row; x1 goes back to a, and max stops before x2.
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM leaseq_queues WHERE name = $1 FOR UPDATE', [b]);
      const source = await engine.queue(dlq);
      const outcome = await Promise.race([
        source.moveJobs(3, { max: 1 }),
        new Promise((resolve) => setTimeout(() => resolve('held up'), 3000)),
      ]);
      await holder.query('ROLLBACK');
      expect(outcome).toBe(1);
      await expect((await engine.queue(a)).inspect()).resolves.toMatchObject({ ready: ['x1'] });
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
      for (const queue of [a, b, dlq]) await engine.deleteQueue(queue);
    }
  });
});
