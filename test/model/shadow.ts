/**
 * The invariant checker of the model runs: after each step of the core it checks what SPEC.md
 * requires against a small shadow of the queue (not a full model of it). The invariants:
 *
 * - I1 nothing due is left after a step: every deadline and availableAt is after the clock (R3);
 * - I2 every job is in exactly one place, and the jobs are exactly those published and not yet
 *   acked or purged: none lost, none invented (R4, R8, R14, R19);
 * - I3 live tokens are unique, in ascending order, and all were issued (R6, R7);
 * - I4 the queue's prefetch bounds its live deliveries (R6);
 * - I5 a session's prefetch bounds its live deliveries; an ended session has none (R6, R16);
 * - I6 a job's deliveryCount is the number of times it was delivered since published or
 *   redriven, less those given back unworked (R6, R14, R33);
 * - I7 only jobs at maxDeliveries die of it, and none below it waits in ready or delayed (R13);
 * - I8 with time far ahead and every session closed, everything drains: acked or dead (`drain`);
 * - I9 a reservation takes from the front of ready as R3 left it and changes nothing else (R6).
 *
 * Besides, each step's outcome is checked against its rule (shadow-outcomes.ts): the refused
 * calls (R2, bad arguments) change nothing, a SessionClosedError leaves exactly R3's effects, and
 * every accepted call returned and did what its rule says.
 *
 * It models queues of R1–R20: FIFO ready, no message groups, manual acks. A run stops using it
 * at its first step with a priority, a group, an auto-acking reserve (R22–R24), a cancel (R28)
 * or a job's expiresAt (R30), and does not use it with a retention (R30) or a maxLength (R31);
 * those are held to the core by the engine comparison only.
 */
import { expect } from 'vitest';
import { type LeaseQueue, type PublishInput, SessionClosedError } from '../../src/core/index.js';
import type { InspectView, ResolvedQueueOptions } from '../../src/core/types.js';
import type { Call } from './operations.js';
import { afterR3, checkOutcome } from './shadow-outcomes.js';

/** A result or a typed error as `${name} ${code}`, as the runner settles a call. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: string };

export interface Sess {
  id: string;
  prefetch: number;
  timeout?: number;
  ackTimeout?: number;
  lastHb: number;
  ended: boolean;
}

export type Active = InspectView['active'][number];

const CLOCK_ERROR = 'ClockError INVALID_CLOCK';
const VALIDATION_ERROR = 'ValidationError INVALID_ARGUMENT';
const SESSION_CLOSED = 'SessionClosedError SESSION_CLOSED';
const MAX_ID_LENGTH = 256;

const posInt = (n: unknown) => n === undefined || (Number.isSafeInteger(n) && (n as number) > 0);
const posIntOrInf = (n: unknown) => n === Number.POSITIVE_INFINITY || posInt(n);
const okDelay = (n: unknown) => n === undefined || (Number.isSafeInteger(n) && (n as number) >= 0);
const okToken = (n: unknown) => n !== undefined && posInt(n);
const okId = (id: unknown) =>
  id === undefined || (typeof id === 'string' && id.length > 0 && id.length <= MAX_ID_LENGTH);

export class Shadow {
  clock = 0;
  nextToken = 1;
  readonly deliveredAt = new Map<number, number>();
  readonly count = new Map<string, number>();
  readonly payload = new Map<string, unknown>();
  readonly present = new Set<string>();
  /** R4: acked ids refused as duplicates until this time (dedupWindow). */
  readonly remembered = new Map<string, number>();
  readonly sessions: Sess[] = [];
  readonly cfg: ResolvedQueueOptions;

  constructor(readonly q: LeaseQueue) {
    this.cfg = q.options;
  }

  /** R16 as decided: heartbeat timeout, or a delivery still live at deliveredAt + ackTimeout. */
  endsBy(s: Sess, now: number, before: InspectView): boolean {
    if (s.ended) return true;
    if (s.timeout !== undefined && s.lastHb + s.timeout <= now) return true;
    if (s.ackTimeout === undefined) return false;
    const ackT = s.ackTimeout;
    return before.active.some((a) => {
      const at = (this.deliveredAt.get(a.token) as number) + ackT;
      return a.session === s.id && at <= now && a.deadline > at;
    });
  }

  /** R4: publishing `id` at `now` is a duplicate. */
  isDuplicate(id: string, now: number): boolean {
    return this.present.has(id) || (this.remembered.get(id) ?? Number.NEGATIVE_INFINITY) > now;
  }

  /** Checks the core's step: `call` at `now` answered `outcome`; `before` is the prior view. */
  check(call: Call, now: number, outcome: Outcome, before: InspectView): void {
    const q = this.q;
    const after = q.inspect();
    expect(q.inspect()).toEqual(after);
    const nowOk = Number.isSafeInteger(now) && now >= this.clock;
    const named = this.namedSession(call);
    const argsOk = this.argsOk(call) && named !== null;
    const closing = nowOk && argsOk && named !== undefined && this.endsBy(named, now, before);
    const error = outcome.ok ? undefined : outcome.error;
    if (!nowOk || !argsOk) {
      const allowed =
        !nowOk && !argsOk
          ? [CLOCK_ERROR, VALIDATION_ERROR]
          : nowOk
            ? [VALIDATION_ERROR]
            : [CLOCK_ERROR];
      expect(allowed, `${String(error)} for ${call.name} at ${now}`).toContain(error);
      expect(after).toEqual(before);
    } else {
      expect(error).toBe(closing ? SESSION_CLOSED : undefined);
      // A SessionClosedError leaves exactly the effects of R3.
      if (error !== undefined) expect(after).toEqual(afterR3(this, before, now));
      for (const s of this.sessions) if (!s.ended && this.endsBy(s, now, before)) s.ended = true;
      this.clock = now;
      expect(after.queueTime).toBe(now);
      if (outcome.ok) checkOutcome(this, call, now, outcome.value, before, after);
    }
    this.invariants(after);
  }

  /** The session a call names: undefined for none, null for one never opened (a bad argument). */
  namedSession(call: Call): Sess | undefined | null {
    const id = 'session' in call ? call.session : undefined;
    if (id === undefined) return undefined;
    return this.sessions.find((s) => s.id === id) ?? null;
  }

  private argsOk(call: Call): boolean {
    switch (call.name) {
      case 'publish':
        return okId(call.job.id) && okDelay(call.job.delay);
      case 'publishBatch':
        return call.jobs.every((job: PublishInput) => okId(job.id) && okDelay(job.delay));
      case 'reserve':
        return posInt(call.max) && posInt(call.visibility);
      case 'ack':
      case 'ackUpTo':
        return okToken(call.token);
      case 'ackMany':
        return call.tokens.every(okToken);
      case 'nack':
      case 'reject':
      case 'nackUpTo':
        return (
          okToken(call.token) &&
          okDelay(call.options?.delay) &&
          // R33: unworked goes back to ready, never to the dead set.
          !(call.options?.attempted === false && call.options.requeue === false) &&
          // R9, R33: an error describes an attempt, and unworked records none.
          !(call.options?.attempted === false && call.options.error !== undefined) &&
          // R9: a dead job is never ready later.
          !(call.options?.requeue === false && (call.options.delay ?? 0) > 0)
        );
      case 'extend':
        return okToken(call.token) && okToken(call.visibility);
      case 'openSession': {
        const options = call.options ?? {};
        return [options.prefetch, options.timeout, options.ackTimeout].every(posIntOrInf);
      }
      default:
        return true;
    }
  }

  invariants(v: InspectView): void {
    // I1
    for (const a of v.active) expect(a.deadline).toBeGreaterThan(v.queueTime);
    for (const d of v.delayed) expect(d.availableAt).toBeGreaterThan(v.queueTime);
    // I2
    const all = [
      ...v.ready,
      ...v.delayed.map((d) => d.id),
      ...v.active.map((a) => a.id),
      ...v.dead.map((d) => d.id),
    ];
    expect(new Set(all).size).toBe(all.length);
    expect(new Set(all)).toEqual(this.present);
    // I3
    const tokens = v.active.map((a) => a.token);
    expect([...tokens].sort((x, y) => x - y)).toEqual(tokens);
    expect(new Set(tokens).size).toBe(tokens.length);
    for (const tok of tokens) expect(tok).toBeLessThan(this.nextToken);
    // I4
    expect(v.active.length).toBeLessThanOrEqual(this.cfg.prefetch);
    // I5
    for (const s of this.sessions) {
      const mine = v.active.filter((a) => a.session === s.id);
      expect(mine.length).toBeLessThanOrEqual(s.ended ? 0 : s.prefetch);
    }
    // I6
    for (const a of v.active) expect(a.deliveryCount).toBe(this.count.get(a.id));
    // I6, I7
    for (const d of v.dead) {
      expect(d.deliveryCount).toBe(this.count.get(d.id));
      if (d.reason === 'max-deliveries')
        expect(d.deliveryCount).toBeGreaterThanOrEqual(this.cfg.maxDeliveries);
    }
    // I7
    for (const id of [...v.ready, ...v.delayed.map((d) => d.id)]) {
      expect(this.count.get(id)).toBeLessThan(this.cfg.maxDeliveries);
    }
  }

  /** I8: with time far ahead and every session closed, everything left drains: acked or dead. */
  drain(): void {
    const q = this.q;
    const now = this.clock + 1_000_000;
    for (const s of this.sessions) {
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
    for (const id of this.present) expect(dead.has(id) || acked.has(id), `${id} lost`).toBe(true);
    expect(end.dead.every((d) => this.present.has(d.id) && !acked.has(d.id))).toBe(true);
  }
}
