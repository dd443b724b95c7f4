import { describe, expect, it } from 'vitest';
import type { QueueHandle } from '../../src/engine/index.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

// Not on PostgreSQL: 130,000 jobs took over two minutes there beside the rest of the suite. What
// overflowed is the SQL engines' shared code, run here on SQLite (and PostgreSQL's release of
// many deliveries in one statement is counted in test/engine/scaling-releases.test.ts).
const engines = (await useConformanceEngines({ client: false })).filter(
  (engine) => engine.name !== 'postgres',
);

/**
 * Counts past what JavaScript takes as the arguments of one call (about 125,000 here): a list
 * of that length spread into a call overflows the stack. A session's live deliveries released
 * together (R16) and a group's waiting members listed by inspect (R24) are such lists.
 */
const COUNT = 130_000;

async function publishMany(
  queue: QueueHandle,
  now: number,
  job: (n: number) => { id: string; group?: string },
): Promise<void> {
  for (let start = 0; start < COUNT; start += 5000) {
    await queue.publishBatch(
      now,
      Array.from({ length: Math.min(5000, COUNT - start) }, (_, n) => job(start + n)),
    );
  }
}

describeEngines(engines, (h) => {
  describe('large counts', () => {
    it('R16 R12 a session that times out holding 130,000 live deliveries releases them all', async () => {
      const q = await h.queue({ visibility: 1_000_000 });
      await publishMany(q, 0, (n) => ({ id: `j${n}` }));
      const session = await q.openSession(0, { timeout: 10 });
      let taken = 0;
      for (;;) {
        const batch = await q.reserve(1, { max: 10_000, session });
        if (batch.length === 0) break;
        taken += batch.length;
      }
      expect(taken).toBe(COUNT);
      expect(await q.stats(10)).toMatchObject({
        ready: COUNT,
        active: 0,
        sessions: 0,
        sessionReleases: COUNT,
      });
      const [first] = await q.reserve(11);
      expect(first).toMatchObject({ id: 'j0', deliveryCount: 2 });
    }, 120_000);

    it('R24 inspect lists a group of 130,000 waiting members in group order', async () => {
      const q = await h.queue();
      await publishMany(q, 0, (n) => ({ id: `j${n}`, group: 'one' }));
      const view = await q.inspect();
      expect(view.ready).toEqual(['j0']);
      expect(view.waiting?.length).toBe(COUNT - 1);
      expect(view.waiting?.[0]).toBe('j1');
      expect(view.waiting?.at(-1)).toBe(`j${COUNT - 1}`);
      expect((await q.inspect({ limit: 2 })).waiting).toEqual(['j1', 'j2']);
    }, 120_000);
  });
});
