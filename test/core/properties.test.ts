import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LeaseQueue } from '../../src/core/index.js';

// Random histories of every operation run in test/model (core-invariants, engines-vs-core).
describe('properties', () => {
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
          const q = new LeaseQueue({ maxDeliveries: Number.POSITIVE_INFINITY });
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
