import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PublishInput } from '../../src/core/index.js';
import { type Engine, openEngine, type QueueHandle } from '../../src/engine/index.js';
import { MOVE_CHUNK } from '../../src/engine/sql/queue-ops.js';
import { POSTGRES_URL, postgresSkipReason } from '../crash/postgres.js';
import { roundTrips } from './round-trips.js';

/**
 * R26: on PostgreSQL every statement is a round trip, and moveJobs (the operators' bulk move,
 * SQS's StartMessageMoveTask) made a few per job: 200,000 jobs moved in over 4 minutes, with
 * every queue of the engine waiting. Its statements are per chunk of MOVE_CHUNK jobs: the
 * look-ups, the moves, the members that went on in their groups.
 */
let skip: string | undefined;
let engine: Engine | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip === undefined) engine = await openEngine(POSTGRES_URL);
});

afterAll(async () => {
  await engine?.close();
});

const name = (label: string) => `move-trips-${label}-${process.pid}-${Date.now()}`;

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
    if (skip !== undefined || engine === undefined) return context.skip(skip);
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
    if (skip !== undefined || engine === undefined) return context.skip(skip);
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
