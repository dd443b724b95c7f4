import { describe, expect, it } from 'vitest';
import { ClockError } from '../../src/core/index.js';
import { expectRejection, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/*
 * docs/spec.md, "Worked example (the acceptance case)", verbatim:
 *
 * Queue with visibility 5. Publish `a` at 0; reserve at 0 → token 1, deadline 5. At 4, token 1 is
 * live. `ack(5, 1)` first advances the clock to 5, reclaims token 1 (deadline 5 ≤ 5) so `a` is
 * ready again, then returns `false`. `reserve(5)` → token 2 for `a`, `deliveryCount` 2,
 * `redelivered` true. `ack(5, 1)` again → `false`, and token 2 is still live. `ack(6, 2)` → `true`,
 * the queue is empty. `ack(4, 2)` → `ClockError`, and the clock stays 6.
 */
describeEngines(engines, (h) => {
  describe('worked example (the acceptance case of the spec)', () => {
    it('R1 R2 R3 R6 R8 R12 runs step by step with every state asserted', async () => {
      // Queue with visibility 5.
      const q = await h.queue({ visibility: 5 });
      expect(await q.queueTime()).toBe(0);
      expect(await q.inspect()).toEqual(view(0));

      // Publish `a` at 0.
      expect(await q.publish(0, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
      expect(await q.inspect()).toEqual(view(0, { ready: ['a'] }));

      // reserve at 0 → token 1, deadline 5.
      expect(await q.reserve(0)).toEqual([
        {
          token: 1,
          id: 'a',
          payload: undefined,
          deadline: 5,
          deliveryCount: 1,
          redelivered: false,
        },
      ]);
      expect(await q.inspect()).toEqual(
        view(0, { active: [{ token: 1, id: 'a', deadline: 5, deliveryCount: 1 }] }),
      );

      // At 4, token 1 is live (deadline 5 > 4): an operation at 4 leaves it active.
      expect(await q.stats(4)).toMatchObject({ queueTime: 4, active: 1, ready: 0, expiries: 0 });
      expect(await q.inspect()).toEqual(
        view(4, { active: [{ token: 1, id: 'a', deadline: 5, deliveryCount: 1 }] }),
      );
      expect(await q.job('a')).toMatchObject({ state: 'active', token: 1, deadline: 5 });

      // ack(5, 1) advances the clock to 5, reclaims token 1 (5 ≤ 5), `a` is ready, returns false.
      expect(await q.ack(5, 1)).toBe(false);
      expect(await q.queueTime()).toBe(5);
      expect(await q.inspect()).toEqual(view(5, { ready: ['a'] }));

      // reserve(5) → token 2 for `a`, deliveryCount 2, redelivered true.
      expect(await q.reserve(5)).toEqual([
        {
          token: 2,
          id: 'a',
          payload: undefined,
          deadline: 10,
          deliveryCount: 2,
          redelivered: true,
        },
      ]);
      expect(await q.inspect()).toEqual(
        view(5, { active: [{ token: 2, id: 'a', deadline: 10, deliveryCount: 2 }] }),
      );

      // ack(5, 1) again → false, and token 2 is still live.
      expect(await q.ack(5, 1)).toBe(false);
      expect(await q.inspect()).toEqual(
        view(5, { active: [{ token: 2, id: 'a', deadline: 10, deliveryCount: 2 }] }),
      );

      // ack(6, 2) → true, the queue is empty.
      expect(await q.ack(6, 2)).toBe(true);
      expect(await q.inspect()).toEqual(view(6));
      expect(await q.job('a')).toBeUndefined();

      // ack(4, 2) → ClockError, and the clock stays 6.
      const error = await expectRejection(() => q.ack(4, 2), ClockError, 'INVALID_CLOCK');
      expect(error.now).toBe(4);
      expect(error.queueTime).toBe(6);
      expect(await q.queueTime()).toBe(6);
      expect(await q.inspect()).toEqual(view(6));

      expect(await q.stats(6)).toMatchObject({
        published: 1,
        deliveries: 2,
        redeliveries: 1,
        acks: 1,
        staleAcks: 2,
        expiries: 1,
        processingTime: { count: 1, sum: 1, max: 1 },
      });
    });
  });
});
