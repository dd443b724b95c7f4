import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { type Engine, openEngine, type ScheduleRecord } from '../../src/engine/index.js';
import { postgresUrl, queueName } from '../conformance/engines.js';
import { countingTurns } from '../event-loop-turns.js';
import { temporaryDirectory } from '../temporary-directory.js';

// A queue may hold thousands of schedules (one per customer, say): setting one must not read
// them all, and listing them must not hold the process for the whole read.
const dir = temporaryDirectory('leaseq-schedules-read-bounded-');
const T0 = Date.UTC(2026, 10, 30, 8, 30);
const HOUR = 3_600_000;

const engines: { name: string; open: () => Promise<Engine> }[] = [
  { name: 'memory', open: () => openEngine('memory:') },
  { name: 'sqlite', open: () => openEngine(`sqlite:${join(dir, 'schedules.db')}`) },
  { name: 'postgres', open: () => openEngine(postgresUrl()) },
];

function record(queue: string, index: number): ScheduleRecord {
  return {
    queue,
    name: `s${index}`,
    cron: undefined,
    every: HOUR + index,
    timezone: undefined,
    payload: { index },
    createdAt: T0,
    lastAt: null,
  };
}

/** Puts `count` schedules into `queue`, a few hundred at a time. */
async function putMany(engine: Engine, queue: string, count: number): Promise<void> {
  for (let start = 0; start < count; start += 200) {
    const indexes = Array.from({ length: Math.min(200, count - start) }, (_, i) => start + i);
    await Promise.all(indexes.map((index) => engine.putSchedule(record(queue, index))));
  }
}

describe.each(engines)('schedules of a queue that has many, on $name', (target) => {
  it('R25 setting a schedule reads that schedule back, not every schedule of its queue', async () => {
    const engine = await target.open();
    const broker = new EngineBroker(engine, { clock: new ManualClock(T0) });
    const name = queueName('many-set');
    try {
      const queue = await broker.queue(name);
      await putMany(engine, name, 600);
      const read: number[] = [];
      const list = engine.listSchedules.bind(engine);
      engine.listSchedules = async (...args) => {
        const records = await list(...args);
        read.push(records.length);
        return records;
      };
      const view = await queue.schedule('daily', '0 3 * * *', { payload: { report: true } });
      expect(view).toMatchObject({ name: 'daily', queue: name, cron: '0 3 * * *' });
      expect(view.payload).toEqual({ report: true });
      // One record read, not the 601 of the queue.
      expect(read.reduce((sum, count) => sum + count, 0)).toBeLessThanOrEqual(1);
      engine.listSchedules = list;
      expect(await engine.listSchedules(name, 's7')).toMatchObject([
        { queue: name, name: 's7', every: HOUR + 7, payload: { index: 7 } },
      ]);
      expect(await engine.listSchedules(name, 'absent')).toEqual([]);
      await engine.deleteQueue(name);
    } finally {
      await broker.close();
    }
  });

  it('R25 listing a queue of many schedules lists each once, the event loop turning between reads', async () => {
    const engine = await target.open();
    const name = queueName('many-list');
    try {
      await engine.queue(name);
      await putMany(engine, name, 1_600);
      const { value: listed, turns } = await countingTurns(() => engine.listSchedules(name));
      expect(listed.map((schedule) => schedule.name)).toEqual(
        Array.from({ length: 1_600 }, (_, index) => `s${index}`).sort(),
      );
      expect(listed.every((schedule) => schedule.queue === name)).toBe(true);
      expect(listed.find((schedule) => schedule.name === 's1599')?.payload).toEqual({
        index: 1599,
      });
      // Not one read of them all: turns between the reads (or steps) of a few hundred.
      expect(turns).toBeGreaterThanOrEqual(3);
      await engine.deleteQueue(name);
    } finally {
      await engine.close();
    }
  });
});
