import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SessionClosedError } from '../../src/core/errors.js';
import { LeaseQueue } from '../../src/core/index.js';
import { configArb, INF, stepsArb } from './arbitraries.js';
import { Shadow } from './model-check.js';

/** I8: with time far ahead and every session closed, everything left drains: acked or dead. */
function drain(sh: Shadow): void {
  const q = sh.q;
  const now = sh.clock + 1_000_000;
  for (const s of sh.sessions) {
    try {
      q.closeSession(now, s.id);
    } catch (error) {
      expect(error).toBeInstanceOf(SessionClosedError);
    }
  }
  const acked = new Set<string>();
  for (let round = 0; round < 200; round++) {
    const ds = q.reserve(now, { max: 100 });
    if (ds.length === 0) break;
    expect(
      q
        .ackMany(
          now,
          ds.map((d) => d.token),
        )
        .every(Boolean),
    ).toBe(true);
    for (const d of ds) acked.add(d.id);
  }
  const end = q.inspect();
  expect({ ready: end.ready, delayed: end.delayed, active: end.active }).toEqual({
    ready: [],
    delayed: [],
    active: [],
  });
  const dead = new Set(end.dead.map((d) => d.id));
  for (const id of sh.present) expect(dead.has(id) || acked.has(id), `${id} lost`).toBe(true);
  expect(end.dead.every((d) => sh.present.has(d.id) && !acked.has(d.id))).toBe(true);
}

describe('properties (random operation sequences)', () => {
  it('every step keeps the invariants of SPEC.md (I1–I7, R2, R3, R6, R8–R14, R16)', () => {
    fc.assert(
      fc.property(configArb, stepsArb, (cfg, steps) => {
        const sh = new Shadow(new LeaseQueue(cfg), cfg);
        for (const [t, o] of steps) sh.step(t, o);
        drain(sh);
      }),
      { numRuns: 200 },
    );
  });

  it('R12 property: one step returns every due delivery in token order ahead of ready', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 20 }), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 0, max: 5 }),
        fc.integer({ min: 1, max: 25 }),
        (visibilities, extra, at) => {
          const ids = [
            ...visibilities.map((_, i) => `r${i}`),
            ...Array.from({ length: extra }, (_, i) => `x${i}`),
          ];
          const q = new LeaseQueue({ maxDeliveries: INF });
          for (const id of ids) q.publish(0, { id });
          const ds = visibilities.map((visibility) => q.reserve(0, { visibility })[0]);
          q.stats(at);
          const due = ds.filter((d) => (d?.deadline ?? 0) <= at).map((d) => d?.id);
          const live = ds.filter((d) => (d?.deadline ?? 0) > at);
          expect(q.inspect().ready).toEqual([...due, ...ids.slice(visibilities.length)]);
          expect(q.inspect().active.map((a) => a.token)).toEqual(live.map((d) => d?.token));
        },
      ),
      { numRuns: 200 },
    );
  });
});
