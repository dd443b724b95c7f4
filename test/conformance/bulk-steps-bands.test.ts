import { describe, expect, it, vi } from 'vitest';
import type { PublishInput } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { MOVE_CHUNK } from '../../src/engine/sql/bulk-steps.js';
import { QueueOps } from '../../src/engine/sql/queue-ops.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/**
 * R23, R26: a moveJobs of all past one step (MOVE_CHUNK jobs) reads each priority's band of
 * ready jobs in its turn, front first, and moves its jobs in that order: a band that ends within
 * a step is not read on into the next band, whose jobs would then move out of their order.
 */
const ids = (prefix: string, count: number): string[] =>
  Array.from({ length: count }, (_, n) => `${prefix}${n}`);

/** Publishes in batches a server takes (its maxBatch, 100 by default). */
async function publishAll(queue: QueueHandle, now: number, jobs: PublishInput[]): Promise<void> {
  for (let start = 0; start < jobs.length; start += 100) {
    await queue.publishBatch(now, jobs.slice(start, start + 100));
  }
}

describeEngines(engines, (h) => {
  describe('R23 R26 moveJobs past one step with more than one priority ready', () => {
    async function source(): Promise<{ from: QueueHandle; toName: string; to: QueueHandle }> {
      const from = await h.queue();
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      // A few jobs of priorities 2 and 1 ahead of more than two steps of priority 0.
      await publishAll(from, 0, [
        { id: 'high0', priority: 2 },
        { id: 'mid0', priority: 1 },
        { id: 'mid1', priority: 1 },
        { id: 'high1', priority: 2 },
        ...ids('j', 2 * MOVE_CHUNK + 500).map((id) => ({ id })),
      ]);
      return { from, toName, to };
    }

    it('R23 R26 moveJobs of all moves the jobs of every band in the order they stood', async () => {
      const { from, toName, to } = await source();
      const all = ['high0', 'high1', 'mid0', 'mid1', ...ids('j', 2 * MOVE_CHUNK + 500)];
      expect(await from.moveJobs(1, { to: toName })).toBe(all.length);
      expect((await to.inspect()).ready).toEqual(all);
      expect(await from.stats(1)).toMatchObject({ ready: 0 });
      const taken = await to.reserve(1, { max: 10 });
      expect(taken.map((delivery) => delivery.id)).toEqual(all.slice(0, 10));
    });

    it('R23 R26 moveJobs with max past one step moves the front of the queue, bands first, and leaves the rest in order', async () => {
      const { from, toName, to } = await source();
      const rest = ids('j', 2 * MOVE_CHUNK + 500);
      const max = MOVE_CHUNK + 500;
      expect(await from.moveJobs(1, { to: toName, max })).toBe(max);
      const moved = ['high0', 'high1', 'mid0', 'mid1', ...rest.slice(0, max - 4)];
      expect((await to.inspect()).ready).toEqual(moved);
      expect((await from.inspect()).ready).toEqual(rest.slice(max - 4));
      expect(await from.stats(1)).toMatchObject({ ready: rest.length - (max - 4) });
      // The source's band is whole: it hands out its front first.
      const taken = await from.reserve(1, { max: 100 });
      expect(taken.map((delivery) => delivery.id)).toEqual(rest.slice(max - 4, max + 96));
    });
  });
});

describeEngines(engines, (h) => {
  /** Steps run apart from other calls only where the storage is SQL, not over a client. */
  const steps = () => (h.name === 'sqlite' || h.name === 'postgres') && !h.viaClient;

  describe('R26 R28 a cancel between the steps of a moveJobs', () => {
    it('R26 R28 a job cancelled among those the move passed over does not make it pass over the next', async (context) => {
      if (!steps()) return context.skip();
      const from = await h.queue();
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      // The target has the first jobs already: they stay, and the move reads on past them.
      const stay = ids('s', 2 * MOVE_CHUNK);
      const move = ids('m', MOVE_CHUNK);
      await publishAll(
        from,
        0,
        [...stay, ...move].map((id) => ({ id })),
      );
      await publishAll(
        to,
        0,
        stay.map((id) => ({ id })),
      );
      // After the second step, a job that stayed and stands nearer the back than the front is
      // cancelled: the jobs behind it close its gap, one place forward each.
      const cancelled = stay[Math.floor(stay.length * 0.8)] as string;
      const original = QueueOps.prototype.moveJobs;
      let step = 0;
      const cancels: Promise<boolean>[] = [];
      const spy = vi.spyOn(QueueOps.prototype, 'moveJobs').mockImplementation(async function (
        this: QueueOps,
        now,
        op,
        run,
      ) {
        const moved = await original.call(this, now, op, run);
        // Queued at the step's end: it runs after the step, before the next one.
        if (run === undefined) return moved;
        step += 1;
        if (step === 2) cancels.push(from.cancel(now, cancelled));
        return moved;
      });
      try {
        expect(await from.moveJobs(1, { to: toName })).toBe(move.length);
      } finally {
        spy.mockRestore();
      }
      expect(await Promise.all(cancels)).toEqual([true]);
      expect((await to.inspect()).ready).toEqual([...stay, ...move]);
      expect((await from.inspect()).ready).toEqual(stay.filter((id) => id !== cancelled));
    });
  });
});
