import { describe, expect, it } from 'vitest';
import { ClockError } from '../../src/core/errors.js';
import { LeaseQueue } from '../../src/core/index.js';
import { expectError, view } from './helpers.js';

/*
 * SPEC.md, "Worked example (the acceptance case)", verbatim:
 *
 * Queue with visibility 5. Publish `a` at 0; reserve at 0 → token 1, deadline 5. At 4, token 1 is
 * live. `ack(5, 1)` first advances the clock to 5, reclaims token 1 (deadline 5 ≤ 5) so `a` is
 * ready again, then returns `false`. `reserve(5)` → token 2 for `a`, `deliveryCount` 2,
 * `redelivered` true. `ack(5, 1)` again → `false`, and token 2 is still live. `ack(6, 2)` → `true`,
 * the queue is empty. `ack(4, 2)` → `ClockError`, and the clock stays 6.
 */
describe('worked example (SPEC.md acceptance case)', () => {
  it('runs step by step with every state asserted', () => {
    // Queue with visibility 5.
    const q = new LeaseQueue({ visibility: 5 });
    expect(q.queueTime).toBe(0);
    expect(q.inspect()).toEqual(view(0));

    // Publish `a` at 0.
    expect(q.publish(0, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
    expect(q.inspect()).toEqual(view(0, { ready: ['a'] }));

    // reserve at 0 → token 1, deadline 5.
    const first = q.reserve(0);
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({
      token: 1,
      id: 'a',
      deadline: 5,
      deliveryCount: 1,
      redelivered: false,
    });
    expect(q.inspect()).toEqual(
      view(0, { active: [{ token: 1, id: 'a', deadline: 5, deliveryCount: 1 }] }),
    );

    // At 4, token 1 is live (deadline 5 > 4): an operation at 4 leaves it active.
    expect(q.stats(4)).toMatchObject({ queueTime: 4, active: 1, ready: 0, expiries: 0 });
    expect(q.inspect()).toEqual(
      view(4, { active: [{ token: 1, id: 'a', deadline: 5, deliveryCount: 1 }] }),
    );

    // ack(5, 1) advances the clock to 5, reclaims token 1 (5 <= 5), `a` is ready, returns false.
    expect(q.ack(5, 1)).toBe(false);
    expect(q.queueTime).toBe(5);
    expect(q.inspect()).toEqual(view(5, { ready: ['a'] }));

    // reserve(5) → token 2 for `a`, deliveryCount 2, redelivered true.
    const second = q.reserve(5);
    expect(second).toHaveLength(1);
    expect(second[0]).toMatchObject({
      token: 2,
      id: 'a',
      deadline: 10,
      deliveryCount: 2,
      redelivered: true,
    });
    expect(q.inspect()).toEqual(
      view(5, { active: [{ token: 2, id: 'a', deadline: 10, deliveryCount: 2 }] }),
    );

    // ack(5, 1) again → false, and token 2 is still live.
    expect(q.ack(5, 1)).toBe(false);
    expect(q.inspect()).toEqual(
      view(5, { active: [{ token: 2, id: 'a', deadline: 10, deliveryCount: 2 }] }),
    );

    // ack(6, 2) → true, the queue is empty.
    expect(q.ack(6, 2)).toBe(true);
    expect(q.inspect()).toEqual(view(6));

    // ack(4, 2) → ClockError, and the clock stays 6.
    const err = expectError(() => q.ack(4, 2), ClockError, 'INVALID_CLOCK');
    expect(err.now).toBe(4);
    expect(err.queueTime).toBe(6);
    expect(q.queueTime).toBe(6);
    expect(q.inspect()).toEqual(view(6));

    expect(q.stats(6)).toMatchObject({
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
