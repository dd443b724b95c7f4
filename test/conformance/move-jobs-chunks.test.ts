import { describe, expect, it } from 'vitest';
import type { PublishInput } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { MOVE_CHUNK } from '../../src/engine/sql/queue-ops.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/**
 * R26 moves of more jobs than the SQL engines look up and write together (MOVE_CHUNK): what
 * a chunk boundary falls between (order, `max`, a group, a job the target refuses) must not
 * show, on any engine.
 */
const C = MOVE_CHUNK;

const ids = (prefix: string, from: number, to: number): string[] =>
  Array.from({ length: to - from }, (_, n) => `${prefix}${from + n}`);

/** Publishes in batches a server takes (its maxBatch, 100 by default). */
async function publishAll(queue: QueueHandle, now: number, jobs: PublishInput[]): Promise<void> {
  for (let start = 0; start < jobs.length; start += 100) {
    await queue.publishBatch(now, jobs.slice(start, start + 100));
  }
}

describeEngines(engines, (h) => {
  describe('R26 moveJobs past one chunk', () => {
    it('R26 moveJobs past one chunk keeps ready then delayed order across the boundary, and max stops inside a chunk', async () => {
      const from = await h.queue();
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      const ready = ids('j', 0, 2 * C + 10);
      await publishAll(from, 0, [
        ...ready.map((id) => ({ id })),
        // Delayed jobs move after every ready one, in availableAt order.
        { id: 'late2', delay: 30 },
        { id: 'late1', delay: 20 },
      ]);
      expect(await from.moveJobs(1, { to: toName, max: C + 7 })).toBe(C + 7);
      expect((await to.inspect()).ready).toEqual(ready.slice(0, C + 7));
      expect(await from.inspect()).toMatchObject({
        ready: ready.slice(C + 7),
        delayed: [
          { id: 'late1', availableAt: 20 },
          { id: 'late2', availableAt: 30 },
        ],
      });
      expect(await from.stats(1)).toMatchObject({ ready: C + 3, delayed: 2 });
      expect(await to.stats(1)).toMatchObject({ ready: C + 7 });

      expect(await from.moveJobs(2, { to: toName })).toBe(C + 5);
      expect((await to.inspect()).ready).toEqual([...ready, 'late1', 'late2']);
      expect(await from.stats(2)).toMatchObject({ ready: 0, delayed: 0 });
      expect(await to.stats(2)).toMatchObject({ ready: 2 * C + 12, delayed: 0 });
      // Handed out in that order, each at deliveryCount 1.
      const taken = await to.reserve(3, { max: 100 });
      expect(taken.map((delivery) => delivery.id)).toEqual(ready.slice(0, 100));
      expect(taken.every((delivery) => delivery.deliveryCount === 1)).toBe(true);
    });

    it('R26 R24 moveJobs past one chunk moves a group longer than a chunk whole, in its order, within max', async () => {
      const from = await h.queue();
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      const solo = ids('s', 0, C - 2);
      const g = ids('g', 0, C + 5);
      const k = ids('k', 0, 3);
      await publishAll(from, 0, [
        ...solo.map((id) => ({ id })),
        ...g.map((id) => ({ id, group: 'g' })),
        ...k.map((id) => ({ id, group: 'k' })),
      ]);
      expect(await from.inspect()).toMatchObject({ ready: [...solo, 'g0', 'k0'] });
      // The ready jobs (a chunk of them), then the members that went on as the ones before
      // them moved: g1, k1; then g2 and k2 are ready in the source, the rest still wait.
      expect(await from.moveJobs(1, { to: toName, max: C + 2 })).toBe(C + 2);
      expect(await from.inspect()).toMatchObject({
        ready: ['g2', 'k2'],
        waiting: g.slice(3),
      });
      expect(await from.stats(1)).toMatchObject({ ready: 2, waiting: C + 2 });
      expect(await to.inspect()).toMatchObject({
        ready: [...solo, 'g0', 'k0'],
        waiting: ['g1', 'k1'],
      });

      expect(await from.moveJobs(2, { to: toName })).toBe(C + 4);
      expect(await from.stats(2)).toMatchObject({ ready: 0, waiting: 0, delayed: 0 });
      // In the target each group waits behind its first member, in the order the members came.
      const arrived = ['g1', 'k1', 'g2', 'k2', ...g.slice(3)];
      expect(await to.inspect()).toMatchObject({ ready: [...solo, 'g0', 'k0'], waiting: arrived });
      expect(await to.stats(2)).toMatchObject({ ready: C, waiting: C + 6 });
      const seqs = await Promise.all(g.map(async (id) => (await to.job(id))?.groupSeq as number));
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    });

    it('R26 R4 moveJobs past one chunk leaves the jobs the target refuses where they were, on both sides of the boundary', async () => {
      const from = await h.queue();
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName, { dedupWindow: 1000 });
      const ready = ids('j', 0, 2 * C + 10);
      const refused = ['j5', `j${C - 1}`, `j${C + 3}`, 'j7'];
      // Present in the target, or acked there and remembered (R4).
      await to.publish(0, { id: 'j7' });
      const [j7] = await to.reserve(0);
      expect(await to.ack(0, j7?.token as number)).toBe(true);
      await to.publishBatch(0, [{ id: 'j5' }, { id: `j${C - 1}` }, { id: `j${C + 3}` }]);
      await publishAll(
        from,
        0,
        ready.map((id) => ({ id })),
      );
      const movable = ready.filter((id) => !refused.includes(id));
      // max counts the jobs moved, not those refused before the one it stops at.
      expect(await from.moveJobs(1, { to: toName, max: C + 5 })).toBe(C + 5);
      expect((await to.inspect()).ready).toEqual([
        'j5',
        `j${C - 1}`,
        `j${C + 3}`,
        ...movable.slice(0, C + 5),
      ]);
      expect(await from.moveJobs(2, { to: toName })).toBe(movable.length - C - 5);
      expect(await from.inspect()).toMatchObject({
        ready: ready.filter((id) => refused.includes(id)),
      });
      expect(await from.stats(2)).toMatchObject({ ready: 4 });
      expect(await to.stats(2)).toMatchObject({ ready: 3 + movable.length });
    });

    it('R26 moveJobs past one chunk sends each job of a dead-letter queue back to its own origin', async () => {
      const dlqName = h.queueName('dlq');
      const dlq = await h.engine().queue(dlqName);
      const aName = h.queueName('a');
      const bName = h.queueName('b');
      const a = await h.engine().queue(aName, { retention: 10, deadLetterQueue: dlqName });
      const b = await h.engine().queue(bName, { retention: 10, deadLetterQueue: dlqName });
      // Rounds of expiries from each origin in turn: the dead-letter queue holds them mixed.
      const order: string[] = [];
      for (let round = 0; round < 4; round += 1) {
        for (const [queue, prefix] of [
          [a, 'a'],
          [b, 'b'],
        ] as const) {
          const batch = ids(`${prefix}${round}-`, 0, 300);
          await publishAll(
            queue,
            round * 100,
            batch.map((id) => ({ id })),
          );
          await queue.stats(round * 100 + 10);
          order.push(...batch);
        }
      }
      expect((await dlq.inspect()).ready).toEqual(order);
      // Back where they came from, they must not expire again at once.
      await h.engine().updateQueue(aName, { retention: null });
      await h.engine().updateQueue(bName, { retention: null });
      expect(await dlq.moveJobs(400, { max: C + 50 })).toBe(C + 50);
      const first = order.slice(0, C + 50);
      expect((await a.inspect()).ready).toEqual(first.filter((id) => id.startsWith('a')));
      expect((await b.inspect()).ready).toEqual(first.filter((id) => id.startsWith('b')));
      const rest = order.slice(C + 50);
      expect(await dlq.moveJobs(401, { origins: [bName] })).toBe(
        rest.filter((id) => id.startsWith('b')).length,
      );
      expect((await dlq.inspect()).ready).toEqual(rest.filter((id) => id.startsWith('a')));
      expect((await b.inspect()).ready).toEqual(order.filter((id) => id.startsWith('b')));
      expect(await a.job('a0-0')).toMatchObject({ state: 'ready', deliveryCount: 0 });
      expect(await a.job('a0-0')).not.toHaveProperty('origin');
    });
  });
});
