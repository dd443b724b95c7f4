/** fast-check generators of queue options and operation sequences for the property tests. */
import fc from 'fast-check';
import type { Config, Op, TimeStep } from './model-check.js';

export const INF = Number.POSITIVE_INFINITY;
const POOL = ['j0', 'j1', 'j2', 'j3', 'j4', 'j5', 'j6', 'j7'];

const ok = (dt: fc.Arbitrary<number>) => fc.record({ kind: fc.constant('ok' as const), dt });

/** Mostly non-decreasing times, some equal ticks, a few invalid ones (behind, 0.5, NaN, ∞, "n"). */
const timeArb: fc.Arbitrary<TimeStep> = fc.oneof(
  { weight: 30, arbitrary: ok(fc.constant(0)) },
  { weight: 40, arbitrary: ok(fc.integer({ min: 0, max: 5 })) },
  { weight: 6, arbitrary: ok(fc.integer({ min: 6, max: 40 })) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('back' as const), d: fc.integer({ min: 1, max: 5 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('bad' as const),
      v: fc.constantFrom('frac' as const, 'nan' as const, 'inf' as const, 'str' as const),
    }),
  },
);

const tokenArb = fc.oneof(
  { weight: 6, arbitrary: fc.nat(60).map((live) => ({ live })) },
  { weight: 3, arbitrary: fc.nat(60).map((pick) => ({ pick })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 5000 }).map((raw) => ({ raw })) },
);
const sessionArb = fc.oneof(
  { weight: 20, arbitrary: fc.nat(8).map((pick) => ({ pick })) },
  { weight: 1, arbitrary: fc.constant({ ghost: true as const }) },
);
const idArb = fc.option(fc.constantFrom(...POOL), { freq: 8, nil: undefined });
const delayArb = fc.oneof(
  { weight: 20, arbitrary: fc.constant(0) },
  { weight: 10, arbitrary: fc.integer({ min: 1, max: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom(-1, 1.5) },
);
const visArb = fc.oneof(
  { weight: 30, arbitrary: fc.integer({ min: 1, max: 30 }) },
  { weight: 1, arbitrary: fc.constantFrom(0, -2, 2.5) },
);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const requeueArb = fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, fc.constant(false));

const openArb: fc.Arbitrary<Op> = fc.record({
  op: fc.constant('open' as const),
  prefetch: maybe(fc.integer({ min: 1, max: 3 })),
  timeout: maybe(fc.integer({ min: 5, max: 60 })),
  ackTimeout: maybe(fc.integer({ min: 5, max: 40 })),
});

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 14,
    arbitrary: fc.record({ op: fc.constant('publish' as const), id: idArb, delay: delayArb }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('publishBatch' as const),
      jobs: fc.array(
        fc.record({
          id: fc.oneof({ weight: 12, arbitrary: idArb }, { weight: 1, arbitrary: fc.constant('') }),
          delay: delayArb,
        }),
        { maxLength: 4 },
      ),
    }),
  },
  {
    weight: 12,
    arbitrary: fc.record({
      op: fc.constant('reserve' as const),
      max: fc.oneof(
        { weight: 30, arbitrary: fc.integer({ min: 1, max: 4 }) },
        { weight: 1, arbitrary: fc.constant(0) },
      ),
      visibility: maybe(visArb),
      session: fc.oneof(
        { weight: 3, arbitrary: fc.constant(undefined) },
        { weight: 2, arbitrary: sessionArb },
      ),
    }),
  },
  { weight: 6, arbitrary: fc.record({ op: fc.constant('ack' as const), token: tokenArb }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('ackMany' as const),
      tokens: fc.array(tokenArb, { maxLength: 4 }),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constantFrom('nack' as const, 'reject' as const),
      token: tokenArb,
      requeue: requeueArb,
      delay: delayArb,
      reason: maybe(fc.constantFrom('boom', 'poison')),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('extend' as const),
      token: tokenArb,
      visibility: visArb,
    }),
  },
  { weight: 2, arbitrary: openArb },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constantFrom('heartbeat' as const, 'close' as const),
      session: sessionArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('ackUpTo' as const),
      session: sessionArb,
      token: tokenArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('nackUpTo' as const),
      session: sessionArb,
      token: tokenArb,
      requeue: requeueArb,
      delay: delayArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('redrive' as const),
      ids: maybe(fc.uniqueArray(fc.constantFrom(...POOL), { maxLength: 4 })),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ op: 'purge' as const }) },
  { weight: 2, arbitrary: fc.constant({ op: 'stats' as const }) },
);

export const configArb: fc.Arbitrary<Config> = fc.record({
  visibility: fc.integer({ min: 1, max: 30 }),
  prefetch: fc.oneof(fc.constant(INF), fc.integer({ min: 1, max: 5 })),
  maxDeliveries: fc.oneof(fc.constant(INF), fc.integer({ min: 1, max: 4 })),
  maxLease: fc.oneof(fc.constant(INF), fc.integer({ min: 5, max: 30 })),
});

/** Up to 60 steps; up to two sessions are opened at 0 first so that session picks often hit. */
export const stepsArb: fc.Arbitrary<[TimeStep, Op][]> = fc
  .tuple(
    fc.array(openArb, { maxLength: 2 }),
    fc.array(fc.tuple(timeArb, opArb), { minLength: 1, maxLength: 58, size: 'max' }),
  )
  .map(([opens, steps]) => [
    ...opens.map((o): [TimeStep, Op] => [{ kind: 'ok', dt: 0 }, o]),
    ...steps,
  ]);
