import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock, type PublishedOccurrence } from '../../src/broker/index.js';
import { openEngine } from '../../src/engine/index.js';
import { postgresSkipReason } from '../crash/postgres.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { type ScratchDatabase, scratchDatabase } from './postgres-scratch.js';

// R25: several schedulers over one storage publish each occurrence once. Three servers over one
// database (three engines, each with its own connections) pass at the same moments over 120
// schedules of every second, the same names in three queues; each pass records and publishes
// its occurrences in transactions of up to 100.

const directory = temporaryDirectory('leaseq-sched-once-');
let skip: string | undefined;
let scratch: ScratchDatabase | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip === undefined) scratch = await scratchDatabase('sched_once');
});

afterAll(async () => {
  await scratch?.drop();
});

const targets = [
  { name: 'SQLite', url: () => `sqlite:${join(directory, 'q.db')}` },
  { name: 'PostgreSQL', url: () => (scratch as ScratchDatabase).url() },
];

const T0 = Date.UTC(2026, 11, 9, 12);
const QUEUES = ['a', 'b', 'c'];
const PER_QUEUE = 40;
const TICKS = 6;

describe.each(targets)('R25 three schedulers over one $name database', (target) => {
  it('R25 passing at the same moments, they publish each occurrence once and none is passed over', async (context) => {
    if (target.name === 'PostgreSQL' && skip !== undefined) return context.skip(skip);
    const url = target.url();
    const clock = new ManualClock(T0);
    const brokers: EngineBroker[] = [];
    try {
      for (let n = 0; n < 3; n++) brokers.push(new EngineBroker(await openEngine(url), { clock }));
      const [first] = brokers as [EngineBroker];
      for (const name of QUEUES) {
        const queue = await first.queue(name);
        for (let n = 0; n < PER_QUEUE; n++) await queue.schedule(`s${n}`, 1_000);
      }
      const schedulers = brokers.map((broker) => broker.scheduler());
      const published: PublishedOccurrence[] = [];
      for (let tick = 1; tick <= TICKS; tick++) {
        clock.advance(1_000);
        const passes = await Promise.all(schedulers.map((scheduler) => scheduler.runOnce()));
        const occurrences = passes.flat();
        // Every occurrence of this second, each published by one of them.
        expect(occurrences.filter((occurrence) => !occurrence.duplicate)).toHaveLength(
          QUEUES.length * PER_QUEUE,
        );
        expect(new Set(occurrences.map(({ at }) => at))).toEqual(new Set([T0 + tick * 1_000]));
        published.push(...occurrences);
      }
      const jobs = published.map(({ queue, id }) => `${queue}/${id}`);
      expect(new Set(jobs).size).toBe(jobs.length);
      for (const name of QUEUES) {
        expect(await (await first.queue(name)).stats()).toMatchObject({
          ready: PER_QUEUE * TICKS,
          published: PER_QUEUE * TICKS,
        });
      }
    } finally {
      for (const broker of brokers) await broker.close();
    }
  }, 60_000);
});
