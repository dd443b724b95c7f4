import fc from 'fast-check';
import type { PublishInput, QueueOptions, SessionOptions } from '../../src/core/index.js';

/** The small pool of job ids, so that duplicates, redrives and purges meet existing jobs. */
export const IDS = ['a', 'b', 'c', 'd', 'e', 'f'] as const;

/**
 * When a step happens, relative to the queue's clock; some steps are invalid on purpose (R2):
 * behind the clock, a fraction, NaN, infinite, or the next tick given as text.
 */
export type TimeStep =
  | { kind: 'later'; by: number }
  | { kind: 'behind'; by: number }
  | { kind: 'fraction' }
  | { kind: 'nan' }
  | { kind: 'infinite' }
  | { kind: 'text' };

/**
 * A token named by where it sits among the live ones (as the core sees them) or among all
 * issued, so stale ones are exercised too.
 */
export type TokenRef =
  | { kind: 'live'; index: number }
  | { kind: 'recent'; back: number }
  | { kind: 'issued'; index: number }
  | { kind: 'forged'; value: number };

/** A session named by how far back it was opened (ended ones included), or one never issued. */
export type SessionRef = { kind: 'opened'; back: number } | { kind: 'unknown' };

/**
 * The ids a redrive or purge names: all (none named), or some of the dead jobs (as the core
 * sees them, chosen by a bit mask) with another id of the pool, which may not be dead.
 */
export type IdsRef = { kind: 'all' } | { kind: 'some'; mask: number; also?: string };

export interface JobSpec {
  id?: string;
  payload?: unknown;
  delay?: number;
  priority?: number;
  group?: string;
  expiresAt?: number;
}

export interface NackSpec {
  requeue?: boolean;
  delay?: number;
  reason?: string;
  error?: string;
  attempted?: boolean;
}

export type Operation =
  | { name: 'publish'; job: JobSpec }
  | { name: 'publishBatch'; jobs: JobSpec[] }
  | {
      name: 'reserve';
      max?: number;
      visibility?: number;
      session?: SessionRef;
      ack?: 'manual' | 'auto';
    }
  | { name: 'ack'; token: TokenRef }
  | { name: 'ackMany'; tokens: TokenRef[] }
  | { name: 'nack' | 'reject'; token: TokenRef; options?: NackSpec }
  | { name: 'extend'; token: TokenRef; visibility: number }
  | { name: 'openSession'; options?: SessionOptions }
  | { name: 'heartbeat' | 'closeSession'; session: SessionRef }
  | { name: 'ackUpTo'; session: SessionRef; token: TokenRef }
  | { name: 'nackUpTo'; session: SessionRef; token: TokenRef; options?: NackSpec }
  | { name: 'redrive' | 'purge'; ids: IdsRef }
  | { name: 'purgeQueue'; dead: boolean }
  | { name: 'stats' }
  | { name: 'cancel'; id: string; remove: boolean };

/**
 * An operation with its references resolved, in the core's names: the call both sides make.
 * A session the queue never issued is named as such (`never-opened`).
 */
export type Call =
  | { name: 'publish'; job: PublishInput }
  | { name: 'publishBatch'; jobs: PublishInput[] }
  | {
      name: 'reserve';
      max?: number;
      visibility?: number;
      session?: string;
      ack?: 'manual' | 'auto';
    }
  | { name: 'ack'; token: number }
  | { name: 'ackMany'; tokens: number[] }
  | { name: 'nack' | 'reject'; token: number; options?: NackSpec }
  | { name: 'extend'; token: number; visibility: number }
  | { name: 'openSession'; options?: SessionOptions }
  | { name: 'heartbeat' | 'closeSession'; session: string }
  | { name: 'ackUpTo'; session: string; token: number }
  | { name: 'nackUpTo'; session: string; token: number; options?: NackSpec }
  | { name: 'redrive' | 'purge'; ids?: string[] }
  | { name: 'purgeQueue'; dead: boolean }
  | { name: 'stats' }
  | { name: 'cancel'; id: string; remove: boolean };

export interface Step {
  time: TimeStep;
  operation: Operation;
}

/** A lease length: now and then short enough to run out at the next steps, mostly longer. */
const leaseLength = fc.oneof(
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }) },
  { weight: 3, arbitrary: fc.integer({ min: 5, max: 30 }) },
);

/** A lease length refused by R6/R10: zero, negative or fractional. */
const badLength = fc.constantFrom(0, -2, 2.5);

/** Mostly valid, with a rare invalid value mixed in (which must be refused alike). */
function mostly<T>(valid: fc.Arbitrary<T>, invalid: fc.Arbitrary<T>): fc.Arbitrary<T> {
  return fc.oneof({ weight: 12, arbitrary: valid }, { weight: 1, arbitrary: invalid });
}

/** Sometimes absent (undefined), else drawn from `arbitrary`. */
function sometimes<T>(
  presentWeight: number,
  arbitrary: fc.Arbitrary<T>,
): fc.Arbitrary<T | undefined> {
  return fc.oneof(
    { weight: presentWeight, arbitrary },
    { weight: 10 - presentWeight, arbitrary: fc.constant(undefined) },
  );
}

/** Steps `by` later than the clock, each amount with its weight. */
export function laterSteps(
  weighted: readonly (readonly [number, fc.Arbitrary<number>])[],
): fc.WeightedArbitrary<{ kind: 'later'; by: number }>[] {
  return weighted.map(([weight, by]) => ({
    weight,
    arbitrary: by.map((value) => ({ kind: 'later' as const, by: value })),
  }));
}

/** Mostly the same tick or a little later, sometimes far, rarely invalid. */
const timeStep: fc.Arbitrary<TimeStep> = fc.oneof(
  ...laterSteps([
    [24, fc.constant(0)],
    [12, fc.constant(1)],
    [8, fc.integer({ min: 2, max: 3 })],
    [4, fc.integer({ min: 4, max: 7 })],
    [2, fc.integer({ min: 8, max: 15 })],
    [1, fc.integer({ min: 16, max: 50 })],
  ]),
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 5 }).map((by) => ({ kind: 'behind' as const, by })),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<TimeStep>(
      { kind: 'fraction' },
      { kind: 'nan' },
      { kind: 'infinite' },
      { kind: 'text' },
    ),
  },
);

/** Mostly a live token or one of the latest, sometimes an older one, rarely a forged one. */
const tokenRef: fc.Arbitrary<TokenRef> = fc.oneof(
  { weight: 9, arbitrary: fc.nat(3).map((index) => ({ kind: 'live' as const, index })) },
  { weight: 3, arbitrary: fc.nat(2).map((back) => ({ kind: 'recent' as const, back })) },
  { weight: 2, arbitrary: fc.nat(60).map((index) => ({ kind: 'issued' as const, index })) },
  {
    weight: 1,
    arbitrary: fc
      .oneof(fc.constantFrom(0, 1.5, 10_000), fc.integer({ min: 1, max: 5000 }))
      .map((value) => ({ kind: 'forged' as const, value })),
  },
);

/** Mostly one of the latest sessions opened (ended ones included), rarely one never issued. */
const sessionRef: fc.Arbitrary<SessionRef> = fc.oneof(
  { weight: 9, arbitrary: fc.constant({ kind: 'opened' as const, back: 0 }) },
  { weight: 3, arbitrary: fc.nat(5).map((back) => ({ kind: 'opened' as const, back })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'unknown' as const }) },
);

const jobSpec: fc.Arbitrary<JobSpec> = fc.record(
  {
    id: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom<string>(...IDS) },
      { weight: 1, arbitrary: fc.constant(undefined) },
    ),
    // Mostly distinct payloads, so a delivery carrying another job's payload is seen.
    payload: fc.oneof(
      fc.constantFrom(undefined, null, 7, 'text', { list: [1, 'two'], nested: { ok: true } }),
      fc.integer().map((n) => ({ n })),
    ),
    delay: fc.oneof(fc.constantFrom(0, 0, 1, 3, 8), fc.integer({ min: 1, max: 20 })),
    priority: fc.constantFrom(0, 0, 1, 9),
    group: fc.constantFrom(undefined, undefined, 'g', 'h'),
    // R30: an absolute time on the queue's clock, now and then within the next steps.
    expiresAt: sometimes(2, fc.integer({ min: 0, max: 80 })),
  },
  { requiredKeys: ['id'] },
);

const badJobSpec: fc.Arbitrary<JobSpec> = fc.constantFrom<JobSpec>(
  { id: '' },
  { id: 'x'.repeat(257) },
  { id: 'a', delay: -1 },
  { id: 'b', delay: 1.5 },
  { id: 'c', priority: 10 },
  { id: 'd', group: '' },
  { id: 'e', expiresAt: 1.5 },
);

/** A batch of up to 4 jobs; now and then one invalid entry somewhere, refusing all (R5). */
const batch: fc.Arbitrary<JobSpec[]> = fc
  .tuple(fc.array(jobSpec, { maxLength: 4 }), sometimes(2, fc.tuple(badJobSpec, fc.nat(3))))
  .map(([jobs, bad]) => {
    if (bad === undefined) return jobs;
    const [entry, at] = bad;
    return [...jobs.slice(0, at), entry, ...jobs.slice(at)];
  });

const nackSpec: fc.Arbitrary<NackSpec | undefined> = fc.option(
  fc.record(
    {
      requeue: fc.boolean(),
      delay: mostly(fc.constantFrom(0, 0, 2, 5), fc.constant(-1)),
      reason: fc.constantFrom('boom', 'poison'),
      // R9: kept with the attempt; with attempted false, a refused call (R33 records none).
      error: fc.constantFrom('TypeError: x is undefined', 'timed out'),
      // R33; with requeue false, a refused call (as is a delay above 0 with it, R9).
      attempted: fc.boolean(),
    },
    { requiredKeys: ['requeue'] },
  ),
  { nil: undefined },
);

function sessionOptions(): fc.Arbitrary<SessionOptions | undefined> {
  const options: fc.Arbitrary<SessionOptions> = fc.record({
    prefetch: sometimes(4, mostly(fc.integer({ min: 1, max: 3 }), fc.constant(0))),
    timeout: sometimes(5, fc.integer({ min: 3, max: 60 })),
    ackTimeout: sometimes(3, fc.integer({ min: 3, max: 40 })),
  });
  return sometimes(8, options);
}

const idsRef: fc.Arbitrary<IdsRef> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ kind: 'all' as const }) },
  {
    weight: 2,
    arbitrary: fc.record(
      {
        kind: fc.constant('some' as const),
        mask: fc.nat(15),
        also: fc.constantFrom<string>(...IDS, 'missing'),
      },
      { requiredKeys: ['kind', 'mask'] },
    ),
  },
);

/**
 * A step uses a queue feature of R22–R24, R28 or R30 (at-most-once receive, priorities,
 * message groups, cancel, a job's expiry), which the shadow's invariants (shadow.ts) do not
 * model.
 */
export function usesQueueFeatures(step: Step): boolean {
  const op = step.operation;
  const featured = (job: JobSpec) =>
    (job.priority ?? 0) !== 0 || job.group !== undefined || job.expiresAt !== undefined;
  if (op.name === 'publish') return featured(op.job);
  if (op.name === 'publishBatch') return op.jobs.some(featured);
  if (op.name === 'cancel') return true; // R28
  return op.name === 'reserve' && op.ack === 'auto';
}

/** One step: a time and an operation; without `queueFeatures`, none of R22–R24 and R28. */
export function stepArbitrary(options: { queueFeatures?: boolean } = {}): fc.Arbitrary<Step> {
  const steps = anyStep();
  return options.queueFeatures === false ? steps.filter((step) => !usesQueueFeatures(step)) : steps;
}

function anyStep(): fc.Arbitrary<Step> {
  const operation: fc.Arbitrary<Operation> = fc.oneof(
    { weight: 7, arbitrary: jobSpec.map((job) => ({ name: 'publish' as const, job })) },
    { weight: 3, arbitrary: batch.map((jobs) => ({ name: 'publishBatch' as const, jobs })) },
    {
      weight: 10,
      arbitrary: fc.record({
        name: fc.constant('reserve' as const),
        max: sometimes(6, mostly(fc.integer({ min: 1, max: 4 }), fc.constant(0))),
        visibility: sometimes(4, mostly(leaseLength, badLength)),
        session: sometimes(6, sessionRef),
        ack: sometimes(2, fc.constantFrom('auto' as const, 'manual' as const)),
      }),
    },
    { weight: 4, arbitrary: tokenRef.map((token) => ({ name: 'ack' as const, token })) },
    {
      weight: 1,
      arbitrary: fc
        .array(tokenRef, { maxLength: 4 })
        .map((tokens) => ({ name: 'ackMany' as const, tokens })),
    },
    {
      weight: 3,
      arbitrary: fc
        .tuple(
          fc.constantFrom('nack' as const, 'nack' as const, 'reject' as const),
          tokenRef,
          nackSpec,
        )
        .map(([name, token, options]) => ({ name, token, options })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(tokenRef, mostly(leaseLength, badLength))
        .map(([token, visibility]) => ({ name: 'extend' as const, token, visibility })),
    },
    {
      weight: 4,
      arbitrary: sessionOptions().map((options) => ({
        name: 'openSession' as const,
        options,
      })),
    },
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.constantFrom('heartbeat' as const, 'closeSession' as const), sessionRef)
        .map(([name, session]) => ({ name, session })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(sessionRef, tokenRef)
        .map(([session, token]) => ({ name: 'ackUpTo' as const, session, token })),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(sessionRef, tokenRef, nackSpec).map(([session, token, options]) => ({
        name: 'nackUpTo' as const,
        session,
        token,
        options,
      })),
    },
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.constantFrom('redrive' as const, 'purge' as const), idsRef)
        .map(([name, ids]) => ({ name, ids })),
    },
    {
      weight: 1,
      arbitrary: fc.boolean().map((dead) => ({ name: 'purgeQueue' as const, dead })),
    },
    { weight: 2, arbitrary: fc.constant({ name: 'stats' as const }) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom(...IDS), fc.boolean())
        .map(([id, remove]) => ({ name: 'cancel' as const, id, remove })),
    },
  );
  return fc.record({ time: timeStep, operation });
}

/** Queue options of one run: small values, so limits are reached within a few steps. */
export const queueOptionsArbitrary: fc.Arbitrary<QueueOptions> = fc.record({
  visibility: leaseLength,
  prefetch: fc.oneof(fc.constant(Number.POSITIVE_INFINITY), fc.integer({ min: 1, max: 5 })),
  maxDeliveries: fc.constantFrom(1, 2, 3, 4, 10, Number.POSITIVE_INFINITY),
  maxLease: fc.oneof(fc.constant(Number.POSITIVE_INFINITY), fc.integer({ min: 3, max: 40 })),
  dedupWindow: fc.constantFrom(0, 0, 5),
});

/**
 * The options of a run that may use the queue bounds of R30 and R31 (retention, maxLength and
 * overflow), small enough to be met within a few steps. The shadow does not model them: a run
 * with any of them is held to the core by the engine comparison only (see `usesQueueBounds`).
 */
export const boundedQueueOptionsArbitrary: fc.Arbitrary<QueueOptions> = fc
  .tuple(
    queueOptionsArbitrary,
    fc.record(
      {
        retention: fc.integer({ min: 3, max: 40 }),
        maxLength: fc.integer({ min: 1, max: 4 }),
        overflow: fc.constantFrom('reject' as const, 'dead-letter-oldest' as const),
      },
      { requiredKeys: [] },
    ),
  )
  .map(([options, bounds]) => ({ ...options, ...bounds }));

/** Whether queue options use R30's retention or R31's maxLength, which the shadow does not model. */
export function usesQueueBounds(options: QueueOptions): boolean {
  return options.retention != null || options.maxLength != null;
}

/** A step as a line of a counterexample. */
export function describeStep(step: Step): string {
  const time = TIME_LABELS[step.time.kind](step.time);
  const { name, ...args } = step.operation;
  return `@${time} ${name}(${JSON.stringify(args, (_key, value) => (value === Infinity ? 'Infinity' : value))})`;
}

const TIME_LABELS: { [K in TimeStep['kind']]: (time: TimeStep) => string } = {
  later: (time) => `+${(time as { by: number }).by}`,
  behind: (time) => `clock-${(time as { by: number }).by}`,
  fraction: () => 'clock+0.5',
  nan: () => 'NaN',
  infinite: () => 'Infinity',
  text: () => '"clock+1"',
};
