import { describe, expect, it } from 'vitest';
import { type InspectOptions, type InspectView, ValidationError } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { expectRefusedUnchanged, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/** The first `limit` entries of each list of `whole`: what `inspect({ limit })` must answer. */
function firstOfEach(whole: InspectView, limit: number): InspectView {
  const { waiting, ...rest } = whole;
  return {
    ...rest,
    ready: whole.ready.slice(0, limit),
    delayed: whole.delayed.slice(0, limit),
    active: whole.active.slice(0, limit),
    dead: whole.dead.slice(0, limit),
    ...(waiting === undefined ? {} : { waiting: waiting.slice(0, limit) }),
  };
}

/**
 * Jobs in every list, each list in an order that is not the order of publishing or of ids, so
 * a cut that takes the wrong rows (or sorts them anew) shows.
 */
async function fillEveryList(q: QueueHandle): Promise<void> {
  // Dead: rejected in the order c, a, b.
  await q.publishBatch(0, [{ id: 'dead-a' }, { id: 'dead-b' }, { id: 'dead-c' }]);
  const doomed = await q.reserve(0, { max: 3 });
  for (const index of [2, 0, 1]) {
    const delivery = doomed[index];
    expect(await q.nack(0, delivery?.token as number, { requeue: false, reason: 'bad' })).toBe(
      true,
    );
  }
  // Active: three deliveries, the first under a session.
  await q.publishBatch(1, [{ id: 'active-1' }, { id: 'active-2' }, { id: 'active-3' }]);
  const session = await q.openSession(1);
  await q.reserve(1, { session });
  await q.reserve(1, { max: 2 });
  // Ready: a higher priority published last is at the front (R23).
  await q.publishBatch(2, [
    { id: 'ready-1' },
    { id: 'ready-2' },
    { id: 'ready-urgent', priority: 9 },
  ]);
  // Delayed: published latest first.
  await q.publishBatch(2, [
    { id: 'delayed-late', delay: 300 },
    { id: 'delayed-soon', delay: 100 },
    { id: 'delayed-mid', delay: 200 },
  ]);
  // Waiting (R24): g-1 is ready, the rest wait behind it.
  await q.publishBatch(
    3,
    ['g-1', 'g-2', 'g-3', 'g-4'].map((id) => ({ id, group: 'g' })),
  );
}

describeEngines(engines, (h) => {
  describe('R17 inspect with a limit', () => {
    it('R17 inspect({ limit }) is the whole view with each list cut to its first `limit`, in the same order', async () => {
      const q = await h.queue({ visibility: 1000, maxDeliveries: 1 });
      await fillEveryList(q);
      const whole = await q.inspect();
      expect(whole.ready).toEqual(['ready-urgent', 'ready-1', 'ready-2', 'g-1']);
      expect(whole.delayed.map((job) => job.id)).toEqual([
        'delayed-soon',
        'delayed-mid',
        'delayed-late',
      ]);
      expect(whole.active.map((live) => live.id)).toEqual(['active-1', 'active-2', 'active-3']);
      expect(whole.active[0]?.session).toEqual(expect.any(String));
      expect(whole.dead.map((job) => job.id)).toEqual(['dead-c', 'dead-a', 'dead-b']);
      expect(whole.waiting).toEqual(['g-2', 'g-3', 'g-4']);
      for (const limit of [1, 2, 3, 4, 1000, 5000]) {
        expect(await q.inspect({ limit }), `limit ${limit}`).toEqual(firstOfEach(whole, limit));
      }
      // No limit, said or not, is the whole view.
      expect(await q.inspect({})).toEqual(whole);
      expect(await q.inspect({ limit: undefined })).toEqual(whole);
    });

    it('R17 a limit on an empty queue answers empty lists and no waiting', async () => {
      const q = await h.queue();
      expect(await q.inspect({ limit: 1 })).toEqual(view(0));
    });

    it('R17 a limit that is not a positive integer, or another option, is refused and changes nothing', async () => {
      const q = await h.queue({ visibility: 1000, maxDeliveries: 1 });
      await fillEveryList(q);
      for (const [limit, shown] of [
        [0, '0'],
        [-1, '-1'],
        [1.5, '1.5'],
        ['3', '"3"'],
        [null, 'null'],
      ] as const) {
        const options = { limit } as unknown as InspectOptions;
        const error = await expectRefusedUnchanged(
          q,
          () => q.inspect(options),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        expect(error.message).toBe(`limit must be a positive integer, got ${shown}`);
      }
      const unknown = { max: 2 } as unknown as InspectOptions;
      const error = await expectRefusedUnchanged(
        q,
        () => q.inspect(unknown),
        ValidationError,
        'INVALID_ARGUMENT',
      );
      expect(error.message).toBe('unknown inspect option "max"');
    });
  });
});
