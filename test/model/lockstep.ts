import { expect } from 'vitest';
import {
  type Delivery,
  type LeaseQueue,
  LeaseqError,
  type PublishInput,
  type PublishResult,
} from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import {
  type Call,
  describeStep,
  IDS,
  type IdsRef,
  type JobSpec,
  type NackSpec,
  type Operation,
  type SessionRef,
  type Step,
  type TimeStep,
  type TokenRef,
  usesQueueBounds,
  usesQueueFeatures,
} from './operations.js';
import { type Outcome, Shadow } from './shadow.js';

type AnyQueue = LeaseQueue | QueueHandle;

/** How one side names what the other side may name differently (sessions, generated ids). */
interface Side {
  session(ref: SessionRef): string;
  ids(ids: string[] | undefined): string[] | undefined;
}

interface Bound {
  /** The call with its references resolved, in the core's names (for the shadow's checks). */
  call: Call;
  invoke(queue: AnyQueue, now: number, side: Side): unknown;
  /** Learns from two successful results before they are compared. */
  learn?(core: unknown, engine: unknown): void;
}

/** A session id that neither side ever issued. */
const UNKNOWN_SESSION = 'never-opened';

/**
 * One engine queue and the pure core run side by side: every step goes to both with the same
 * `now`, and their results and states must agree exactly. Tokens must be the same numbers
 * (R6); session ids and generated job ids are compared through the order they were issued in.
 * At every step the shadow checks the core's result and state against the invariants of
 * SPEC.md (shadow.ts). Without an engine queue, the core runs alone under the shadow's checks.
 */
export class Lockstep {
  /**
   * The invariant checker of the core; it stops at the first step using R22–R24, R28 or a
   * job's expiry, and is not used at all with R30's retention or R31's maxLength.
   */
  private shadow: Shadow | undefined;
  /** Every token issued so far, in order. */
  private readonly tokens: number[] = [];
  /** Sessions in the order they were opened: the core's id and the engine's. */
  private readonly sessions: { core: string; engine: string }[] = [];
  private readonly sessionToCore = new Map<string, string>();
  /** Generated job ids: the engine's → the core's, and back. */
  private readonly idToCore = new Map<string, string>();
  private readonly idToEngine = new Map<string, string>();
  /** The steps so far, for failure messages. */
  private readonly trail: string[] = [];

  constructor(
    readonly core: LeaseQueue,
    readonly queue?: QueueHandle,
  ) {
    this.shadow = usesQueueBounds(core.options) ? undefined : new Shadow(core);
  }

  /** Applies one step to both sides; fails at the first difference. */
  async apply(step: Step): Promise<void> {
    this.trail.push(describeStep(step));
    const now = this.timeOf(step.time);
    const before = this.core.inspect();
    const bound = this.bind(step.operation);
    const coreSide: Side = { session: (ref) => this.sessionOf(ref).core, ids: (ids) => ids };
    const engineSide: Side = {
      session: (ref) => this.sessionOf(ref).engine,
      ids: (ids) => ids?.map((id) => this.idToEngine.get(id) ?? id),
    };
    const expected = await settle(() => bound.invoke(this.core, now, coreSide), 'core');
    if (usesQueueFeatures(step)) this.shadow = undefined;
    this.shadow?.check(bound.call, now, expected, before);
    if (this.queue === undefined) {
      // The core alone: its names are the ones the next steps refer to.
      if (expected.ok) bound.learn?.(expected.value, expected.value);
      return;
    }
    const actual = await settle(
      () => bound.invoke(this.queue as QueueHandle, now, engineSide),
      'engine',
    );
    if (expected.ok && actual.ok) bound.learn?.(expected.value, actual.value);
    const where = `after ${this.trail.length} steps:\n  ${this.trail.join('\n  ')}`;
    expect(this.outcomeToCore(actual), `result ${where}`).toEqual(expected);
    expect(this.toCore(await this.queue.inspect()), `inspect() ${where}`).toEqual(
      this.core.inspect(),
    );
    expect(await this.queue.nextEventAt(), `nextEventAt() ${where}`).toBe(this.core.nextEventAt());
  }

  /** The end of a run: counters, dead letters and every job must agree too. */
  async finish(): Promise<void> {
    if (this.queue !== undefined) await this.compareAtEnd(this.queue);
    this.shadow?.drain();
  }

  private async compareAtEnd(queue: QueueHandle): Promise<void> {
    const where = `at the end of:\n  ${this.trail.join('\n  ')}`;
    expect(this.toCore(await queue.deadLetters()), `deadLetters() ${where}`).toEqual(
      this.core.deadLetters(),
    );
    for (const id of [...IDS, ...this.idToEngine.keys()]) {
      const engineId = this.idToEngine.get(id) ?? id;
      expect(this.toCore(await queue.job(engineId)), `job(${id}) ${where}`).toEqual(
        this.core.job(id),
      );
    }
    const clock = this.core.queueTime;
    expect(this.toCore(await queue.stats(clock)), `stats(${clock}) ${where}`).toEqual(
      this.core.stats(clock),
    );
    // Far ahead: every lease, delay and session runs out; both sides must settle alike.
    const later = clock + 1000;
    expect(this.toCore(await queue.stats(later)), `stats(${later}) ${where}`).toEqual(
      this.core.stats(later),
    );
    expect(this.toCore(await queue.inspect()), `inspect() ${where}`).toEqual(this.core.inspect());
    expect(this.toCore(await queue.deadLetters()), `deadLetters() ${where}`).toEqual(
      this.core.deadLetters(),
    );
    // R34: page by page, the same dead letters in the same pages (cursors are each side's own).
    const enginePages: unknown[] = [];
    const corePages: unknown[] = [];
    let engineAfter: string | undefined;
    let coreAfter: string | undefined;
    do {
      const page = await queue.deadLetterPage({ limit: 2, after: engineAfter });
      enginePages.push(this.toCore(page.deadLetters));
      engineAfter = page.next;
    } while (engineAfter !== undefined && enginePages.length < 1000);
    do {
      const page = this.core.deadLetterPage({ limit: 2, after: coreAfter });
      corePages.push(page.deadLetters);
      coreAfter = page.next;
    } while (coreAfter !== undefined);
    expect(enginePages, `deadLetterPage({ limit: 2 }) pages ${where}`).toEqual(corePages);
  }

  private timeOf(time: TimeStep): number {
    const clock = this.core.queueTime;
    switch (time.kind) {
      case 'later':
        return clock + time.by;
      case 'behind':
        return clock - time.by;
      case 'fraction':
        return clock + 0.5;
      case 'nan':
        return Number.NaN;
      case 'infinite':
        return Number.POSITIVE_INFINITY;
      case 'text':
        return String(clock + 1) as unknown as number;
    }
  }

  private tokenOf(ref: TokenRef): number {
    if (ref.kind === 'forged') return ref.value;
    if (ref.kind === 'live') {
      // Live as far as the core knows before this step's time passes: it may expire first.
      const live = this.core.inspect().active;
      if (live.length > 0) return (live[ref.index % live.length] as { token: number }).token;
    }
    const count = this.tokens.length;
    if (count === 0) return 1; // not issued yet: stale
    const index = ref.kind === 'recent' ? Math.max(0, count - 1 - ref.back) : ref.index % count;
    return this.tokens[index] as number;
  }

  /** The ids a reference names, in the core's names; undefined for all. */
  private idsOf(ref: IdsRef): string[] | undefined {
    if (ref.kind === 'all') return undefined;
    const dead = this.core.inspect().dead.map((job) => job.id);
    const some = dead.filter((_id, index) => (ref.mask >> index) & 1);
    return ref.also === undefined ? some : [...some, ref.also];
  }

  /** The session a reference names; one never issued when none was opened yet. */
  private sessionOf(ref: SessionRef): { core: string; engine: string } {
    const count = this.sessions.length;
    if (ref.kind === 'unknown' || count === 0) {
      return { core: UNKNOWN_SESSION, engine: UNKNOWN_SESSION };
    }
    return this.sessions[Math.max(0, count - 1 - ref.back)] as { core: string; engine: string };
  }

  private bind(op: Operation): Bound {
    switch (op.name) {
      case 'publish': {
        const input = jobInput(op.job);
        return {
          call: { name: 'publish', job: input },
          invoke: (q, now) => q.publish(now, input),
          learn: (core, engine) =>
            this.learnIds([input], [core as PublishResult], [engine as PublishResult]),
        };
      }
      case 'publishBatch': {
        const inputs = op.jobs.map(jobInput);
        return {
          call: { name: 'publishBatch', jobs: inputs },
          invoke: (q, now) => q.publishBatch(now, inputs),
          learn: (core, engine) =>
            this.learnIds(inputs, core as PublishResult[], engine as PublishResult[]),
        };
      }
      case 'reserve': {
        const { max, visibility, ack } = op;
        // Without any session opened yet, a reservation under "the latest session" has none.
        const session =
          op.session?.kind === 'opened' && this.sessions.length === 0 ? undefined : op.session;
        return {
          call: {
            name: 'reserve',
            ...withoutUndefined({ max, visibility, ack }),
            ...(session === undefined ? {} : { session: this.sessionOf(session).core }),
          },
          invoke: (q, now, side) =>
            q.reserve(now, {
              ...(max === undefined ? {} : { max }),
              ...(visibility === undefined ? {} : { visibility }),
              ...(session === undefined ? {} : { session: side.session(session) }),
              ...(ack === undefined ? {} : { ack }),
            }),
          learn: (core) => {
            for (const delivery of core as Delivery[]) this.tokens.push(delivery.token);
          },
        };
      }
      case 'ack': {
        const token = this.tokenOf(op.token);
        return { call: { name: 'ack', token }, invoke: (q, now) => q.ack(now, token) };
      }
      case 'ackMany': {
        const tokens = op.tokens.map((ref) => this.tokenOf(ref));
        return { call: { name: 'ackMany', tokens }, invoke: (q, now) => q.ackMany(now, tokens) };
      }
      case 'nack':
      case 'reject': {
        const token = this.tokenOf(op.token);
        const options = nackOptions(op.options);
        const call: Call = { name: op.name, token, ...(options === undefined ? {} : { options }) };
        return op.name === 'nack'
          ? { call, invoke: (q, now) => q.nack(now, token, options) }
          : { call, invoke: (q, now) => q.reject(now, token, options) };
      }
      case 'extend': {
        const token = this.tokenOf(op.token);
        return {
          call: { name: 'extend', token, visibility: op.visibility },
          invoke: (q, now) => q.extend(now, token, op.visibility),
        };
      }
      case 'openSession': {
        const options = op.options === undefined ? undefined : withoutUndefined(op.options);
        return {
          call: { name: 'openSession', ...(options === undefined ? {} : { options }) },
          invoke: (q, now) => q.openSession(now, options),
          learn: (core, engine) => this.learnSession(core as string, engine as string),
        };
      }
      case 'heartbeat':
        return {
          call: { name: 'heartbeat', session: this.sessionOf(op.session).core },
          invoke: (q, now, side) => q.heartbeat(now, side.session(op.session)),
        };
      case 'closeSession':
        return {
          call: { name: 'closeSession', session: this.sessionOf(op.session).core },
          invoke: (q, now, side) => q.closeSession(now, side.session(op.session)),
        };
      case 'ackUpTo': {
        const token = this.tokenOf(op.token);
        return {
          call: { name: 'ackUpTo', session: this.sessionOf(op.session).core, token },
          invoke: (q, now, side) => q.ackUpTo(now, side.session(op.session), token),
        };
      }
      case 'nackUpTo': {
        const token = this.tokenOf(op.token);
        const options = nackOptions(op.options);
        const session = this.sessionOf(op.session).core;
        return {
          call: { name: 'nackUpTo', session, token, ...(options === undefined ? {} : { options }) },
          invoke: (q, now, side) => q.nackUpTo(now, side.session(op.session), token, options),
        };
      }
      case 'redrive': {
        const ids = this.idsOf(op.ids);
        return {
          call: { name: 'redrive', ...(ids === undefined ? {} : { ids }) },
          invoke: (q, now, side) => q.redrive(now, side.ids(ids)),
        };
      }
      case 'purge': {
        const ids = this.idsOf(op.ids);
        return {
          call: { name: 'purge', ...(ids === undefined ? {} : { ids }) },
          invoke: (q, now, side) => q.purge(now, side.ids(ids)),
        };
      }
      case 'purgeQueue':
        return {
          call: { name: 'purgeQueue', dead: op.dead },
          invoke: (q, now) => q.purgeQueue(now, { dead: op.dead }),
        };
      case 'stats':
        return { call: { name: 'stats' }, invoke: (q, now) => q.stats(now) };
      case 'cancel':
        return {
          call: { name: 'cancel', id: op.id, remove: op.remove },
          invoke: (q, now) => q.cancel(now, op.id, { remove: op.remove }),
        };
    }
  }

  private learnIds(
    inputs: readonly PublishInput[],
    core: readonly PublishResult[],
    engine: readonly PublishResult[],
  ): void {
    inputs.forEach((input, index) => {
      const coreId = core[index]?.id;
      const engineId = engine[index]?.id;
      if (input.id !== undefined || coreId === undefined || engineId === undefined) return;
      const known = this.idToCore.get(engineId);
      if (known !== undefined && known !== coreId) return; // compared (and reported) next
      this.idToCore.set(engineId, coreId);
      this.idToEngine.set(coreId, engineId);
    });
  }

  private learnSession(core: string, engine: string): void {
    expect(typeof engine, 'openSession() returns a string id').toBe('string');
    expect(this.sessionToCore.has(engine), `session id ${engine} was issued before`).toBe(false);
    this.sessions.push({ core, engine });
    this.sessionToCore.set(engine, core);
  }

  /** An engine outcome in the core's names; a string result is a session id (openSession). */
  private outcomeToCore(outcome: Outcome): Outcome {
    if (!outcome.ok) return outcome;
    const key = typeof outcome.value === 'string' ? 'session' : undefined;
    return { ok: true, value: this.toCore(outcome.value, key) };
  }

  /** Renames the engine's session ids and generated job ids to the core's. */
  private toCore(value: unknown, key?: string): unknown {
    if (key === 'payload') return value;
    if (typeof value === 'string') {
      if (key === 'id') return this.idToCore.get(value) ?? value;
      if (key === 'session') return this.sessionToCore.get(value) ?? value;
      return value;
    }
    if (Array.isArray(value)) return value.map((item) => this.toCore(item, key));
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(
      Object.entries(value).map(([name, item]) => [name, this.toCore(item, name)]),
    );
  }
}

/** Runs a call on one side: its result, or its leaseq error as class and code. */
export async function settle(call: () => unknown, side: string): Promise<Outcome> {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    if (error instanceof LeaseqError) return { ok: false, error: `${error.name} ${error.code}` };
    throw new Error(`the ${side} threw something other than a leaseq error: ${error}`, {
      cause: error,
    });
  }
}

/** The spec as a caller writes it: keys without a value left out. */
export function withoutUndefined<T extends object>(spec: T): T {
  return Object.fromEntries(Object.entries(spec).filter(([, value]) => value !== undefined)) as T;
}

function jobInput(spec: JobSpec): PublishInput {
  return withoutUndefined(spec);
}

function nackOptions(spec: NackSpec | undefined): NackSpec | undefined {
  return spec === undefined ? undefined : withoutUndefined(spec);
}
