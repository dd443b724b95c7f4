import { describe, expect, it } from 'vitest';
import type { PublishInput } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { BULK_STEP } from '../../src/engine/sql/bulk-steps.js';
import { view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/**
 * R20: a redrive, purge or moveJobs of no more jobs than one step takes is one step on every
 * engine, so nothing of R3 runs again between its parts. A member that goes on past its expiry
 * (R24, R30), or a redriven job past it, is still ready when the call returns, and dies at the
 * next operation, as in the core.
 */
async function publishAll(queue: QueueHandle, now: number, jobs: PublishInput[]): Promise<void> {
  for (let start = 0; start < jobs.length; start += 100) {
    await queue.publishBatch(now, jobs.slice(start, start + 100));
  }
}

describeEngines(engines, (h) => {
  describe('R20 small bulk calls are one step', () => {
    it('R26 R24 R30 moveJobs with max moves a group whole when the target refuses an earlier job, a member past its expiry included', async () => {
      const from = await h.queue();
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      await to.publish(0, { id: 'held' });
      await from.publishBatch(0, [
        { id: 'held', priority: 9 },
        { id: 'g1', group: 'g' },
        { id: 'g2', group: 'g', expiresAt: 3 },
      ]);
      // held stays (the target has it); g1 moves, g2 goes on and follows it within max.
      expect(await from.moveJobs(5, { to: toName, max: 2 })).toBe(2);
      expect(await from.inspect()).toEqual(view(5, { ready: ['held'] }));
      expect(await to.inspect()).toEqual(view(0, { ready: ['held', 'g1'], waiting: ['g2'] }));
    });

    it('R26 R24 R30 moveJobs of named ids with max moves a member past its expiry that went on, when named', async () => {
      const from = await h.queue();
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      await to.publish(0, { id: 'held' });
      await from.publishBatch(0, [
        { id: 'held' },
        { id: 'g1', group: 'g' },
        { id: 'g2', group: 'g', expiresAt: 3 },
      ]);
      expect(await from.moveJobs(5, { to: toName, ids: ['held', 'g1', 'g2'], max: 2 })).toBe(2);
      expect(await from.inspect()).toEqual(view(5, { ready: ['held'] }));
      expect(await to.inspect()).toEqual(view(0, { ready: ['held', 'g1'], waiting: ['g2'] }));
    });

    it('R26 R24 R30 a member past its expiry that went on and was not moved is ready when the move returns', async () => {
      const from = await h.queue();
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      await to.publishBatch(0, [{ id: 'held' }, { id: 'g2' }]);
      await from.publishBatch(0, [
        { id: 'held' },
        { id: 'g1', group: 'g' },
        { id: 'g2', group: 'g', expiresAt: 3 },
      ]);
      expect(await from.moveJobs(5, { to: toName, max: 2 })).toBe(1);
      expect(await from.inspect()).toEqual(view(5, { ready: ['held', 'g2'] }));
      // The next operation's R3 ends it.
      expect(await from.stats(5)).toMatchObject({ ready: 1, dead: 1, expired: 1 });
    });

    it('R14 R30 a redrive of all of exactly one step of dead jobs leaves those past their retention ready', async () => {
      const q = await h.queue({ retention: 5 });
      await publishAll(
        q,
        0,
        Array.from({ length: BULK_STEP }, (_, n) => ({ id: `j${n}` })),
      );
      expect(await q.stats(10)).toMatchObject({ dead: BULK_STEP, expired: BULK_STEP });
      expect(await q.redrive(20)).toBe(BULK_STEP);
      // Read without taking time: every one is ready, none dead again yet.
      expect((await q.deadLetterPage({ limit: 1 })).deadLetters).toEqual([]);
      for (const id of ['j0', `j${BULK_STEP - 1}`]) {
        expect(await q.job(id)).toMatchObject({ state: 'ready' });
      }
      // The next operation's R3 ends them again.
      expect(await q.stats(20)).toMatchObject({
        ready: 0,
        dead: BULK_STEP,
        redriven: BULK_STEP,
        expired: 2 * BULK_STEP,
      });
    });
  });
});
