import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { byCodeUnits } from '../../src/core/index.js';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { postgresUrl, queueName } from '../conformance/engines.js';
import { countingTurns } from '../event-loop-turns.js';
import { temporaryDirectory } from '../temporary-directory.js';

// Every scheduler pass (each second, in every server) lists every schedule. On SQLite a read runs
// in this process: thousands of schedules in one read held the whole process once a second.
const dir = temporaryDirectory('leaseq-schedules-listing-');

const engines: { name: string; open: () => Promise<Engine> }[] = [
  { name: 'sqlite', open: () => openEngine(`sqlite:${join(dir, 'schedules.db')}`) },
  { name: 'postgres', open: () => openEngine(postgresUrl()) },
];

describe.each(engines)('listSchedules of every queue on $name', (target) => {
  it('R25 lists every schedule once, by queue then name, the event loop turning between reads', async () => {
    const engine = await target.open();
    try {
      // Names whose code-unit order is not every collation's: upper case, digits, dots, dashes.
      const queues = [queueName('Sched'), queueName('sched'), queueName('s.b')];
      for (const queue of queues) await engine.queue(queue);
      const names = Array.from({ length: 420 }, (_, index) =>
        index % 3 === 0 ? `N-${index}` : index % 3 === 1 ? `n.${index}` : `n${index}`,
      );
      await Promise.all(
        queues.flatMap((queue) =>
          names.map((name, index) =>
            engine.putSchedule({
              queue,
              name,
              cron: undefined,
              every: 60_000 + index,
              timezone: undefined,
              payload: { index },
              createdAt: 1_000,
              lastAt: null,
            }),
          ),
        ),
      );
      const { value: all, turns } = await countingTurns(() => engine.listSchedules());
      const ours = all.filter((schedule) => queues.includes(schedule.queue));
      const expected = queues
        .flatMap((queue) => names.map((name) => [queue, name] as const))
        .sort(([qa, na], [qb, nb]) => byCodeUnits(qa, qb) || byCodeUnits(na, nb));
      expect(ours.map((schedule) => [schedule.queue, schedule.name])).toEqual(expected);
      expect(ours.find((schedule) => schedule.name === 'n.4')?.payload).toEqual({ index: 4 });
      // The whole list is in code-unit order too, whatever else the storage holds.
      const keys = all.map((schedule) => [schedule.queue, schedule.name] as const);
      expect(keys).toEqual(
        [...keys].sort(([qa, na], [qb, nb]) => byCodeUnits(qa, qb) || byCodeUnits(na, nb)),
      );
      // 1,260 schedules: one turn before the first read, more only between reads.
      expect(turns).toBeGreaterThanOrEqual(4);
      for (const queue of queues) await engine.deleteQueue(queue);
    } finally {
      await engine.close();
    }
  });
});
