import fc from 'fast-check';
import { expect } from 'vitest';
import type {
  InspectView,
  MoveJobsOptions,
  NackOptions,
  PublishInput,
  QueueOptions,
} from '../../src/core/index.js';
import type { Engine, QueueHandle } from '../../src/engine/index.js';
import { settle, withoutUndefined } from './lockstep.js';
import { laterSteps, type TokenRef } from './operations.js';
import type { Outcome } from './shadow.js';

/**
 * Queues linked by `deadLetterQueue` (R26), run side by side on two engines: the memory
 * engine (the reference, its queues are the core's `LeaseQueue`s linked together) and a
 * durable one, under the same queue names. Every step goes to one queue of both at the same
 * explicit `now` (now and then with a second call on another queue made at once, or an engine
 * call: updateQueue, deleteQueue, the queue made again). After it, its result, `inspect()` and
 * `nextEventAt()` of the queues it acted on or changed (on the reference), and `job(id)` of
 * the jobs it changed or named must agree exactly; at the end every queue, job and dead set,
 * and again after a far jump of time. Tokens must be the same numbers (R6 numbers them per
 * queue from 1, +1 per reservation, for one handle: lockstep.ts holds the engines to the core
 * the same way). Steps on one queue leave the others idle, so arrivals (dead letters,
 * `moveJobs`) meet queues whose own clocks are far behind, or ahead, with ids they acked.
 */

/** The small pool of job ids: duplicates, re-publishes and arrivals of remembered ids happen. */
export const LINKED_IDS = ['a', 'b', 'c', 'd'] as const;

/** A job to publish; its expiry is relative to the step's `now` (R30's `expiresAt` is not). */
export interface LinkedJob {
  id: string;
  payload: number;
  delay?: number;
  priority?: number;
  group?: string;
  expiresIn?: number;
}

/**
 * When a step happens: after the latest clock of all queues (`later`), after the clock of the
 * queue it acts on, which may be behind the others (`own`), or before that clock (`behind`,
 * refused by R2).
 */
export type LinkedTime =
  | { kind: 'later'; by: number }
  | { kind: 'own'; by: number }
  | { kind: 'behind'; by: number };

/** Where `moveJobs` sends jobs: each to its origin, to a queue of the run, or to none that exists. */
export type MoveTarget =
  | { kind: 'origin' }
  | { kind: 'queue'; index: number }
  | { kind: 'missing' };

export type LinkedOperation =
  | { name: 'publish'; jobs: LinkedJob[] }
  | { name: 'reserve'; max?: number; visibility?: number; ack?: 'auto' }
  | { name: 'ack'; token: TokenRef }
  | { name: 'nack' | 'reject'; token: TokenRef; options?: NackOptions }
  | { name: 'extend'; token: TokenRef; visibility: number }
  | { name: 'cancel'; id: string; remove: boolean }
  | { name: 'moveJobs'; to: MoveTarget; ids?: string[]; max?: number }
  | { name: 'redrive' | 'purge'; ids?: string[] }
  | { name: 'purgeQueue'; dead: boolean }
  | { name: 'stats' }
  // The engine's own calls on the queue: its options changed, the queue deleted or made again.
  | { name: 'updateQueue'; change: QueueChange }
  | { name: 'deleteQueue' }
  | { name: 'createQueue' };

/**
 * An `updateQueue` of a queue of the run: a window (R4) for later acks, another retention
 * (R30) or length bound (R31) from the next step on (null removes them), another dead-letter
 * queue (forward only, so no loop: R26), or none.
 */
export interface QueueChange {
  dedupWindow?: number;
  retention?: number | null;
  maxLength?: number | null;
  link?: LinkKind;
}

/** The operations of a queue (not the engine's calls on it). */
export type QueueOperation = Exclude<
  LinkedOperation,
  { name: 'updateQueue' | 'deleteQueue' | 'createQueue' }
>;

export interface LinkedStep {
  /** The queue acted on, modulo the run's number of queues. */
  queue: number;
  /**
   * With `busy`, the first queue from `queue` on (round) where the operation has something to
   * act on, as the reference sees it before the step: live deliveries for ack, nack, extend;
   * ready jobs for reserve; ready or delayed ones for moveJobs; dead ones for redrive and purge.
   * `queue` itself when none has.
   */
  busy: boolean;
  time: LinkedTime;
  operation: LinkedOperation;
  /**
   * A second call on another queue, made at the same `now` without waiting for the first:
   * the SQL engines commit the two in one transaction (their group commit), the memory engine
   * runs them one after the other, in the order they were made. The answers must agree.
   */
  also?: { queue: number; operation: LinkedOperation };
}

/** Where a queue's dead jobs go: the next queue, the one after it, a queue never created, none. */
export type LinkKind = 'next' | 'skip' | 'missing' | 'none';

/** The queues of one run, first to last; each may name a later one as its dead-letter queue. */
export interface LinkedConfig {
  queues: { options: QueueOptions; link: LinkKind }[];
  /** Create the queues last first (each dead-letter queue exists before its source) or not. */
  createLastFirst: boolean;
}

// --- arbitraries ------------------------------------------------------------------------------

/** Sometimes absent (undefined), else drawn from `arbitrary` (weights out of 10). */
function sometimes<T>(
  presentWeight: number,
  arbitrary: fc.Arbitrary<T>,
): fc.Arbitrary<T | undefined> {
  return fc.oneof(
    { weight: presentWeight, arbitrary },
    { weight: 10 - presentWeight, arbitrary: fc.constant(undefined) },
  );
}

const leaseLength = fc.oneof(
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }) },
  { weight: 3, arbitrary: fc.integer({ min: 5, max: 30 }) },
);

/** Queue options: small values, so limits, windows and bounds are met within a few steps. */
const queueOptions: fc.Arbitrary<QueueOptions> = fc
  .record({
    visibility: leaseLength,
    maxDeliveries: fc.constantFrom(1, 2, 3, Number.POSITIVE_INFINITY),
    // R4: none, windows that end within a few steps, and ones that outlast most idle times.
    dedupWindow: fc.constantFrom(0, 0, 1, 3, 10, 40, 1000),
    prefetch: sometimes(3, fc.integer({ min: 1, max: 3 })),
    maxLease: sometimes(3, fc.integer({ min: 3, max: 40 })),
    // R30: counted from the first publish, also in a dead-letter queue.
    retention: sometimes(3, fc.integer({ min: 5, max: 150 })),
    // R31: met at publish only; arrivals from other queues may take ready above it.
    maxLength: sometimes(2, fc.integer({ min: 1, max: 3 })),
    overflow: fc.constantFrom('reject' as const, 'dead-letter-oldest' as const),
  })
  .map(({ overflow, ...options }) => {
    const set = withoutUndefined(options);
    return set.maxLength === undefined ? set : { ...set, overflow };
  });

/**
 * 2 or 3 queues: the first dead-letters into the next one (or, of 3, into the last), the
 * middle one of 3 mostly into the last, and the last now and then into a queue never created.
 */
export const linkedConfigArbitrary: fc.Arbitrary<LinkedConfig> = fc
  .record({
    count: fc.constantFrom(2, 3),
    options: fc.tuple(queueOptions, queueOptions, queueOptions),
    first: fc.constantFrom<LinkKind>('next', 'next', 'next', 'skip'),
    middle: fc.constantFrom<LinkKind>('next', 'next', 'missing', 'none'),
    last: fc.constantFrom<LinkKind>('none', 'none', 'missing'),
    createLastFirst: fc.boolean(),
  })
  .map(({ count, options, first, middle, last, createLastFirst }) => {
    // Only forward links: a chain never loops (R26 refuses loops at configuration).
    const links: LinkKind[] = count === 2 ? ['next', last] : [first, middle, last];
    return {
      queues: links.map((link, index) => ({ options: options[index] as QueueOptions, link })),
      createLastFirst,
    };
  });

const job: fc.Arbitrary<LinkedJob> = fc.record(
  {
    id: fc.constantFrom<string>(...LINKED_IDS),
    payload: fc.nat(99),
    delay: fc.oneof(
      { weight: 6, arbitrary: fc.constant(0) },
      { weight: 2, arbitrary: fc.integer({ min: 1, max: 10 }) },
    ),
    priority: fc.constantFrom(0, 0, 0, 3, 7),
    group: fc.constantFrom(undefined, undefined, undefined, 'g', 'h'),
    expiresIn: sometimes(2, fc.integer({ min: 0, max: 30 })),
  },
  { requiredKeys: ['id', 'payload'] },
);

const tokenRef: fc.Arbitrary<TokenRef> = fc.oneof(
  { weight: 9, arbitrary: fc.nat(3).map((index) => ({ kind: 'live' as const, index })) },
  { weight: 3, arbitrary: fc.nat(2).map((back) => ({ kind: 'recent' as const, back })) },
  { weight: 1, arbitrary: fc.nat(30).map((index) => ({ kind: 'issued' as const, index })) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 50 }).map((value) => ({ kind: 'forged' as const, value })),
  },
);

const nackOptions: fc.Arbitrary<NackOptions | undefined> = fc.option(
  fc.oneof(
    // Mostly dead-lettering (into the next queue) or a plain requeue, now and then delayed.
    {
      weight: 5,
      arbitrary: fc.record(
        { requeue: fc.constant(false), reason: fc.constantFrom('boom', 'poison') },
        { requiredKeys: ['requeue'] },
      ),
    },
    {
      weight: 3,
      arbitrary: fc.record(
        { requeue: fc.constant(true), delay: fc.constantFrom(0, 2, 5) },
        { requiredKeys: ['requeue'] },
      ),
    },
    // R33: given back unworked; rarely a refused combination (R9, R33).
    { weight: 1, arbitrary: fc.constant({ requeue: true, attempted: false }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<NackOptions>(
        { requeue: false, delay: 3 },
        { requeue: false, attempted: false },
      ),
    },
  ),
  { nil: undefined, freq: 5 },
);

const idList: fc.Arbitrary<string[]> = fc.subarray([...LINKED_IDS, 'missing']);

const moveTarget: fc.Arbitrary<MoveTarget> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: 'origin' as const }) },
  { weight: 4, arbitrary: fc.nat(2).map((index) => ({ kind: 'queue' as const, index })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'missing' as const }) },
);

const queueOperation: fc.Arbitrary<QueueOperation> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc
      .oneof(
        { weight: 4, arbitrary: job.map((one) => [one]) },
        { weight: 1, arbitrary: fc.array(job, { minLength: 2, maxLength: 3 }) },
      )
      .map((jobs) => ({ name: 'publish' as const, jobs })),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      name: fc.constant('reserve' as const),
      max: sometimes(6, fc.integer({ min: 1, max: 3 })),
      visibility: sometimes(4, leaseLength),
      // R22: an auto-acked job is remembered for the window like an acked one (R4).
      ack: sometimes(2, fc.constant('auto' as const)),
    }),
  },
  { weight: 5, arbitrary: tokenRef.map((token) => ({ name: 'ack' as const, token })) },
  {
    weight: 6,
    arbitrary: fc
      .tuple(
        fc.constantFrom('nack' as const, 'nack' as const, 'reject' as const),
        tokenRef,
        nackOptions,
      )
      .map(([name, token, options]) => ({ name, token, options })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(tokenRef, leaseLength)
      .map(([token, visibility]) => ({ name: 'extend' as const, token, visibility })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom<string>(...LINKED_IDS), fc.boolean())
      .map(([id, remove]) => ({ name: 'cancel' as const, id, remove })),
  },
  {
    weight: 4,
    arbitrary: fc.record(
      {
        name: fc.constant('moveJobs' as const),
        to: moveTarget,
        ids: idList,
        max: fc.integer({ min: 1, max: 2 }),
      },
      { requiredKeys: ['name', 'to'] },
    ),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('redrive' as const, 'purge' as const), sometimes(6, idList))
      .map(([name, ids]) => ({ name, ids })),
  },
  { weight: 1, arbitrary: fc.boolean().map((dead) => ({ name: 'purgeQueue' as const, dead })) },
  { weight: 2, arbitrary: fc.constant({ name: 'stats' as const }) },
);

const queueChange: fc.Arbitrary<QueueChange> = fc.record(
  {
    dedupWindow: fc.constantFrom(0, 2, 30),
    retention: fc.constantFrom(null, 10, 60),
    maxLength: fc.constantFrom(null, 1, 2),
    link: fc.constantFrom<LinkKind>('next', 'none', 'missing'),
  },
  { requiredKeys: [] },
);

const operation: fc.Arbitrary<LinkedOperation> = fc.oneof(
  { weight: 40, arbitrary: queueOperation },
  { weight: 1, arbitrary: queueChange.map((change) => ({ name: 'updateQueue' as const, change })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      { name: 'deleteQueue' as const },
      { name: 'createQueue' as const },
      { name: 'createQueue' as const },
    ),
  },
);

/** Mostly the same tick or a little later, sometimes a jump past most windows and leases. */
const time: fc.Arbitrary<LinkedTime> = fc.oneof(
  ...laterSteps([
    [30, fc.constant(0)],
    [15, fc.constant(1)],
    [8, fc.integer({ min: 2, max: 5 })],
    [3, fc.integer({ min: 6, max: 20 })],
    [1, fc.integer({ min: 21, max: 80 })],
    [2, fc.integer({ min: 100, max: 3000 })],
  ]),
  {
    weight: 4,
    arbitrary: fc.integer({ min: 0, max: 5 }).map((by) => ({ kind: 'own' as const, by })),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 3 }).map((by) => ({ kind: 'behind' as const, by })),
  },
);

/** One step: the first queue (where jobs die into the others) is acted on most. */
export const linkedStepArbitrary: fc.Arbitrary<LinkedStep> = fc.record({
  queue: fc.constantFrom(0, 0, 0, 1, 1, 2),
  busy: fc.constantFrom(true, true, true, false),
  time,
  operation,
  also: sometimes(1, fc.record({ queue: fc.constantFrom(0, 1, 1, 2), operation })),
});

// --- the two engines side by side ---------------------------------------------------------------

/** One engine of the run: the engine, and a handle on each queue of the run (by name). */
interface Side {
  name: string;
  engine: Engine;
  queues: readonly QueueHandle[];
}

/** A step's call with its references resolved: what both engines run, and how it reads. */
interface Bound {
  text: string;
  invoke(side: Side): Promise<unknown>;
  /** Ids the call names: their job views in the queue acted on are compared. */
  ids: readonly string[];
}

/** The label of queue `index` in messages: q0 is the head of the chain. */
const label = (index: number) => `q${index}`;

/** JSON with Infinity spelt out (queue options). */
function show(value: unknown): string {
  return JSON.stringify(value, (_key, item) =>
    item === Number.POSITIVE_INFINITY ? 'Infinity' : item,
  );
}

/**
 * The queues of one run on the reference (memory) and on the engine under test, under the same
 * names, so origins (R26) compare as they are. Handles go by name, so a queue deleted and made
 * again is reached by the same handle, and a deleted one answers NOT_FOUND on both.
 */
export class LinkedWorld {
  /** Every token each queue issued so far (on the reference), in order. */
  private readonly tokens: number[][];
  /** The calls so far, resolved, for failure messages. */
  private readonly trail: string[] = [];

  private constructor(
    readonly names: readonly string[],
    /** A queue name no queue of either engine has: a dead-letter queue or move target missing. */
    readonly missing: string,
    /** Each queue's options as created (its dead-letter queue resolved). */
    readonly options: readonly QueueOptions[],
    readonly reference: Side,
    readonly engine: Side,
    private readonly header: string,
  ) {
    this.tokens = names.map(() => []);
  }

  /** Creates the run's queues on both engines (the same names and options). */
  static async open(
    config: LinkedConfig,
    names: readonly string[],
    missing: string,
    engines: { reference: Engine; engine: Engine; engineName: string },
  ): Promise<LinkedWorld> {
    const options = config.queues.map(({ options: each, link }, index): QueueOptions => {
      const target = linkTarget(names, missing, index, link);
      return target === undefined ? each : { ...each, deadLetterQueue: target };
    });
    const order = names.map((_name, index) => index);
    if (config.createLastFirst) order.reverse();
    for (const index of order) {
      const name = names[index] as string;
      await engines.reference.queue(name, options[index]);
      await engines.engine.queue(name, options[index]);
    }
    const side = (name: string, engine: Engine): Side => ({
      name,
      engine,
      queues: names.map((queue) => engine.handle(queue)),
    });
    const created = config.createLastFirst ? 'last first' : 'first first';
    const header = [
      `${engines.engineName} against memory, queues (created ${created}):`,
      ...options.map((each, index) => `  ${label(index)} ${show(each)}`),
      `  (${names.map((name, index) => `${label(index)} = ${name}`).join(', ')}; missing = ${missing})`,
    ].join('\n');
    return new LinkedWorld(
      names,
      missing,
      options,
      side('memory engine', engines.reference),
      side(engines.engineName, engines.engine),
      header,
    );
  }

  /** Applies one step to both engines; fails at the first difference. */
  async apply(step: LinkedStep): Promise<void> {
    const count = this.names.length;
    const index = await this.queueOf(step);
    const now = await this.timeOf(step.time, index);
    const calls = [{ index, operation: step.operation as LinkedOperation }];
    if (step.also !== undefined) {
      const other =
        step.also.queue % count === index ? (index + 1) % count : step.also.queue % count;
      calls.push({ index: other, operation: step.also.operation });
    }
    const bound = await Promise.all(
      calls.map((call) => this.bind(call.operation, call.index, now)),
    );
    const text = bound.map((each, at) => `${label(calls[at]?.index ?? 0)} ${each.text}`);
    this.trail.push(text.join('   together with   '));
    const before = await this.snapshot();
    // Made together: neither call waits for the other before it is made.
    const run = (side: Side) =>
      Promise.all(bound.map((each) => settle(() => each.invoke(side), side.name)));
    const expected = await run(this.reference);
    const actual = await run(this.engine);
    for (const [at, call] of calls.entries()) {
      const outcome = expected[at];
      if (call.operation.name !== 'reserve' || outcome?.ok !== true) continue;
      for (const delivery of outcome.value as { token: number }[]) {
        this.tokens[call.index]?.push(delivery.token);
      }
    }
    expect(actual, `result ${this.where()}`).toEqual(expected);
    // Compared: the queues acted on and every queue the step changed on the reference (an
    // arrival, R26); the jobs it changed there and those it named in the queue acted on. A
    // change the engine makes elsewhere is seen at the next step comparing it, or at the end.
    const after = await this.snapshot();
    const queues = new Set(calls.map((call) => call.index));
    for (const [queue, view] of after.queues.entries()) {
      if (before.queues[queue] !== view) queues.add(queue);
    }
    const touched = new Set<string>();
    for (const [key, view] of after.jobs) if (before.jobs.get(key) !== view) touched.add(key);
    for (const [at, call] of calls.entries()) {
      for (const id of bound[at]?.ids ?? []) touched.add(jobKey(call.index, id));
    }
    await this.compare(`after step ${this.trail.length}`, [...queues], [...touched]);
  }

  /** The end of a run: every job, dead set and counter, then again after a far jump of time. */
  async finish(): Promise<void> {
    const queues = [...this.names.keys()];
    const all = queues.flatMap((index) => LINKED_IDS.map((id) => jobKey(index, id)));
    await this.compare('at the end', queues, all, true);
    const later = Math.max(...(await this.clocks())) + 5000;
    // Far ahead, queue by queue: leases and delays run out, jobs expire and move along the chain.
    for (const index of queues) {
      const stats = (side: Side) =>
        settle(() => (side.queues[index] as QueueHandle).stats(later), side.name);
      const expected = await stats(this.reference);
      const actual = await stats(this.engine);
      this.trail.push(`${label(index)} @${later} stats()`);
      expect(actual, `result ${this.where()}`).toEqual(expected);
    }
    await this.compare('at the end, after a far jump', queues, all, true);
  }

  /** Compares inspect() and nextEventAt() of `queues`, and the job views of `keys`. */
  private async compare(
    when: string,
    queues: readonly number[],
    keys: readonly string[],
    deep = false,
  ): Promise<void> {
    const [expected, actual] = await Promise.all([
      this.state(this.reference, queues, keys, deep),
      this.state(this.engine, queues, keys, deep),
    ]);
    expect(actual, `${when}: ${this.where()}`).toEqual(expected);
  }

  /**
   * What is compared, by a label naming the queue and the read; the reads are made together
   * (one transaction on the SQL engines).
   */
  private async state(
    side: Side,
    queues: readonly number[],
    keys: readonly string[],
    deep: boolean,
  ): Promise<Record<string, Outcome>> {
    const reads: [string, () => Promise<unknown>][] = [];
    for (const index of [...queues].sort()) {
      const queue = side.queues[index] as QueueHandle;
      reads.push([`${label(index)} inspect()`, () => queue.inspect()]);
      reads.push([`${label(index)} nextEventAt()`, () => queue.nextEventAt()]);
      if (deep) reads.push([`${label(index)} deadLetters()`, () => queue.deadLetters()]);
    }
    for (const key of [...keys].sort()) {
      const [index, id] = splitKey(key);
      const queue = side.queues[index] as QueueHandle;
      reads.push([`${label(index)} job(${id})`, () => queue.job(id)]);
    }
    const values = await Promise.all(reads.map(([, read]) => settle(read, side.name)));
    return Object.fromEntries(reads.map(([name], at) => [name, values[at] as Outcome]));
  }

  /**
   * The reference as JSON: each queue's inspect() and nextEventAt(), and the view of every
   * pooled id in every queue, by `jobKey`.
   */
  private async snapshot(): Promise<{ queues: string[]; jobs: Map<string, string> }> {
    const queues: string[] = [];
    const jobs = new Map<string, string>();
    for (const [index, queue] of this.reference.queues.entries()) {
      const inspect = await settle(() => queue.inspect(), 'memory engine');
      const next = await settle(() => queue.nextEventAt(), 'memory engine');
      queues.push(JSON.stringify([inspect, next]));
      for (const id of LINKED_IDS) {
        jobs.set(
          jobKey(index, id),
          JSON.stringify(await settle(() => queue.job(id), 'memory engine')),
        );
      }
    }
    return { queues, jobs };
  }

  private where(): string {
    return `${this.header}\nsteps:\n  ${this.trail.join('\n  ')}`;
  }

  /** Each queue's clock on the reference; 0 for a queue deleted (made again, it starts at 0). */
  private async clocks(): Promise<number[]> {
    return Promise.all(this.reference.queues.map((queue) => queue.queueTime().catch(() => 0)));
  }

  /** The queue a step acts on (see LinkedStep.busy). */
  private async queueOf(step: LinkedStep): Promise<number> {
    const count = this.names.length;
    const first = step.queue % count;
    if (!step.busy) return first;
    const wanted = BUSY[step.operation.name];
    if (wanted === undefined) return first;
    for (let offset = 0; offset < count; offset++) {
      const index = (first + offset) % count;
      const view = await (this.reference.queues[index] as QueueHandle)
        .inspect()
        .catch(() => undefined);
      if (view !== undefined && wanted(view)) return index;
    }
    return first;
  }

  private async timeOf(time: LinkedTime, index: number): Promise<number> {
    const clocks = await this.clocks();
    const own = clocks[index] as number;
    switch (time.kind) {
      case 'later':
        return Math.max(...clocks) + time.by;
      case 'own':
        return own + time.by;
      case 'behind':
        return own - time.by;
    }
  }

  /** A token by where it sits among the queue's live ones (on the reference) or issued ones. */
  private async tokenOf(ref: TokenRef, index: number): Promise<number> {
    if (ref.kind === 'forged') return ref.value;
    const issued = this.tokens[index] as number[];
    if (ref.kind === 'live') {
      // Live as the reference sees it before this step's time passes: it may expire first.
      const view = await (this.reference.queues[index] as QueueHandle)
        .inspect()
        .catch(() => undefined);
      const active = view?.active ?? [];
      if (active.length > 0) return (active[ref.index % active.length] as { token: number }).token;
    }
    if (issued.length === 0) return 1; // none issued yet: stale
    const at =
      ref.kind === 'recent' ? Math.max(0, issued.length - 1 - ref.back) : ref.index % issued.length;
    return issued[at] as number;
  }

  private async bind(op: LinkedOperation, index: number, now: number): Promise<Bound> {
    const at = `@${now}`;
    const name = this.names[index] as string;
    const on = (side: Side) => side.queues[index] as QueueHandle;
    switch (op.name) {
      case 'publish': {
        const inputs = op.jobs.map((spec) => publishInput(spec, now));
        const only = inputs.length === 1 ? inputs[0] : undefined;
        return only === undefined
          ? {
              text: `${at} publishBatch(${show(inputs)})`,
              invoke: (side) => on(side).publishBatch(now, inputs),
              ids: inputs.map((input) => input.id as string),
            }
          : {
              text: `${at} publish(${show(only)})`,
              invoke: (side) => on(side).publish(now, only),
              ids: [only.id as string],
            };
      }
      case 'reserve': {
        const options = withoutUndefined({ max: op.max, visibility: op.visibility, ack: op.ack });
        return {
          text: `${at} reserve(${show(options)})`,
          invoke: (side) => on(side).reserve(now, options),
          ids: [],
        };
      }
      case 'ack': {
        const token = await this.tokenOf(op.token, index);
        return { text: `${at} ack(${token})`, invoke: (side) => on(side).ack(now, token), ids: [] };
      }
      case 'nack':
      case 'reject': {
        const token = await this.tokenOf(op.token, index);
        const { options } = op;
        const text = `${at} ${op.name}(${token}${options === undefined ? '' : `, ${show(options)}`})`;
        return op.name === 'nack'
          ? { text, invoke: (side) => on(side).nack(now, token, options), ids: [] }
          : { text, invoke: (side) => on(side).reject(now, token, options), ids: [] };
      }
      case 'extend': {
        const token = await this.tokenOf(op.token, index);
        return {
          text: `${at} extend(${token}, ${op.visibility})`,
          invoke: (side) => on(side).extend(now, token, op.visibility),
          ids: [],
        };
      }
      case 'cancel':
        return {
          text: `${at} cancel(${show(op.id)}, ${show({ remove: op.remove })})`,
          invoke: (side) => on(side).cancel(now, op.id, { remove: op.remove }),
          ids: [op.id],
        };
      case 'moveJobs': {
        const count = this.names.length;
        const to =
          op.to.kind === 'origin'
            ? undefined
            : op.to.kind === 'missing'
              ? this.missing
              : (this.names[op.to.index % count] as string);
        const options: MoveJobsOptions = withoutUndefined({ ids: op.ids, to, max: op.max });
        const target = op.to.kind === 'queue' ? label(op.to.index % count) : op.to.kind;
        return {
          text: `${at} moveJobs(${show(withoutUndefined({ ids: op.ids, max: op.max }))}, to ${target})`,
          invoke: (side) => on(side).moveJobs(now, options),
          ids: op.ids ?? [],
        };
      }
      case 'redrive':
      case 'purge': {
        const { ids } = op;
        const text = `${at} ${op.name}(${ids === undefined ? '' : show(ids)})`;
        return op.name === 'redrive'
          ? { text, invoke: (side) => on(side).redrive(now, ids), ids: ids ?? [] }
          : { text, invoke: (side) => on(side).purge(now, ids), ids: ids ?? [] };
      }
      case 'purgeQueue':
        return {
          text: `${at} purgeQueue(${show({ dead: op.dead })})`,
          invoke: (side) => on(side).purgeQueue(now, { dead: op.dead }),
          ids: [],
        };
      case 'stats':
        return { text: `${at} stats()`, invoke: (side) => on(side).stats(now), ids: [] };
      case 'updateQueue': {
        const { link, ...rest } = op.change;
        const options: QueueOptions =
          link === undefined
            ? rest
            : {
                ...rest,
                deadLetterQueue: linkTarget(this.names, this.missing, index, link) ?? null,
              };
        return {
          text: `updateQueue(${show(options)})`,
          invoke: (side) => side.engine.updateQueue(name, options),
          ids: [],
        };
      }
      case 'deleteQueue':
        return {
          text: 'deleteQueue()',
          invoke: (side) => side.engine.deleteQueue(name),
          ids: [],
        };
      case 'createQueue': {
        const options = this.options[index];
        return {
          text: `queue(${show(options)}) (made again when deleted)`,
          invoke: async (side) => {
            await side.engine.queue(name, options);
            return 'opened';
          },
          ids: [],
        };
      }
    }
  }
}

/** The queue a link of queue `index` names; undefined for none. */
function linkTarget(
  names: readonly string[],
  missing: string,
  index: number,
  link: LinkKind,
): string | undefined {
  switch (link) {
    case 'next':
      return names[index + 1];
    case 'skip':
      return names[index + 2] ?? names[index + 1];
    case 'missing':
      return missing;
    case 'none':
      return undefined;
  }
}

/** What makes a queue worth acting on for an operation (see LinkedStep.busy). */
const BUSY: Partial<Record<LinkedOperation['name'], (view: InspectView) => boolean>> = {
  reserve: (view) => view.ready.length > 0,
  ack: (view) => view.active.length > 0,
  nack: (view) => view.active.length > 0,
  reject: (view) => view.active.length > 0,
  extend: (view) => view.active.length > 0,
  cancel: (view) => view.ready.length + view.delayed.length + view.active.length > 0,
  moveJobs: (view) => view.ready.length + view.delayed.length > 0,
  redrive: (view) => view.dead.length > 0,
  purge: (view) => view.dead.length > 0,
};

/** A job of a queue of the run, as a key: `index/id`. */
function jobKey(index: number, id: string): string {
  return `${index}/${id}`;
}

function splitKey(key: string): [number, string] {
  const slash = key.indexOf('/');
  return [Number(key.slice(0, slash)), key.slice(slash + 1)];
}

function publishInput(spec: LinkedJob, now: number): PublishInput {
  return withoutUndefined({
    id: spec.id,
    payload: spec.payload,
    delay: spec.delay === 0 ? undefined : spec.delay,
    priority: spec.priority === 0 ? undefined : spec.priority,
    group: spec.group,
    expiresAt: spec.expiresIn === undefined ? undefined : now + spec.expiresIn,
  });
}

/** A step as a line of a counterexample (references unresolved; the failure shows them resolved). */
export function describeLinkedStep(step: LinkedStep): string {
  const { time } = step;
  const when =
    time.kind === 'later'
      ? `+${time.by}`
      : time.kind === 'own'
        ? `own+${time.by}`
        : `own-${time.by}`;
  const call = (operation: LinkedOperation) => {
    const { name, ...args } = operation;
    return `${name}(${show(args)})`;
  };
  const where = `q${step.queue}${step.busy ? ' (or a busy one)' : ''}`;
  const also =
    step.also === undefined
      ? ''
      : ` together with q${step.also.queue} ${call(step.also.operation)}`;
  return `${where} @${when} ${call(step.operation)}${also}`;
}

/** A generated step as a fast-check command. */
export class LinkedCommand implements fc.AsyncCommand<object, LinkedWorld> {
  constructor(readonly step: LinkedStep) {}

  check(): boolean {
    return true;
  }

  run(_model: object, world: LinkedWorld): Promise<void> {
    return world.apply(this.step);
  }

  toString(): string {
    return describeLinkedStep(this.step);
  }
}

/** Sequences of up to `maxCommands` steps; LEASEQ_MODEL_REPLAY_PATH replays a shrunk one. */
export function linkedCommands(
  maxCommands: number,
): fc.Arbitrary<Iterable<fc.AsyncCommand<object, LinkedWorld>>> {
  const replayPath = process.env.LEASEQ_MODEL_REPLAY_PATH;
  return fc.commands([linkedStepArbitrary.map((step) => new LinkedCommand(step))], {
    maxCommands,
    size: 'max',
    ...(replayPath === undefined ? {} : { replayPath }),
  });
}
