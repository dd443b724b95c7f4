/**
 * The step checker of the property tests: runs one generated operation against a LeaseQueue and
 * checks the invariants of SPEC.md against a small shadow (not a full model of the queue).
 */
import { expect } from 'vitest';
import { ClockError, SessionClosedError, ValidationError } from '../../src/core/errors.js';
import type { LeaseQueue } from '../../src/core/index.js';
import type { InspectView } from '../../src/core/types.js';
import { afterR3, checkOutcome } from './model-outcomes.js';

export type TimeStep =
  | { kind: 'ok'; dt: number }
  | { kind: 'back'; d: number }
  | { kind: 'bad'; v: 'frac' | 'nan' | 'inf' | 'str' };
/** A live token (from the current active list), an issued one, or a raw number. */
export type TokenPick = { live: number } | { pick: number } | { raw: number };
export type SessionPick = { pick: number } | { ghost: true };
export type Entry = { id?: string; delay: number };

export type Op =
  | { op: 'publish'; id?: string; delay: number }
  | { op: 'publishBatch'; jobs: Entry[] }
  | { op: 'reserve'; max: number; visibility?: number; session?: SessionPick }
  | { op: 'ack'; token: TokenPick }
  | { op: 'ackMany'; tokens: TokenPick[] }
  | { op: 'nack' | 'reject'; token: TokenPick; requeue: boolean; delay: number; reason?: string }
  | { op: 'extend'; token: TokenPick; visibility: number }
  | { op: 'open'; prefetch?: number; timeout?: number; ackTimeout?: number }
  | { op: 'heartbeat' | 'close'; session: SessionPick }
  | { op: 'ackUpTo'; session: SessionPick; token: TokenPick }
  | { op: 'nackUpTo'; session: SessionPick; token: TokenPick; requeue: boolean; delay: number }
  | { op: 'redrive'; ids?: string[] }
  | { op: 'purge' }
  | { op: 'stats' };

export interface Config {
  visibility: number;
  prefetch: number;
  maxDeliveries: number;
  maxLease: number;
}

export interface Sess {
  id: string;
  prefetch: number;
  timeout?: number;
  ackTimeout?: number;
  lastHb: number;
  ended: boolean;
}

export type Active = InspectView['active'][number];
const posInt = (n: number | undefined) => n === undefined || (Number.isInteger(n) && n > 0);
const okDelay = (n: number) => Number.isInteger(n) && n >= 0;

export class Shadow {
  clock = 0;
  nextToken = 1;
  readonly issued: number[] = [];
  readonly deliveredAt = new Map<number, number>();
  readonly count = new Map<string, number>();
  readonly payload = new Map<string, unknown>();
  readonly present = new Set<string>();
  readonly sessions: Sess[] = [];
  private seq = 0;
  /** Payloads handed to the last publish or publishBatch call, in entry order. */
  sent: unknown[] = [];

  constructor(
    readonly q: LeaseQueue,
    readonly cfg: Config,
  ) {}

  nowOf(t: TimeStep): number {
    if (t.kind === 'ok') return this.clock + t.dt;
    if (t.kind === 'back') return this.clock - t.d;
    if (t.v === 'frac') return this.clock + 0.5;
    if (t.v === 'nan') return Number.NaN;
    if (t.v === 'inf') return Number.POSITIVE_INFINITY;
    return String(this.clock + 1) as unknown as number;
  }

  /** Each pick resolves once per step, before the operation runs (live tokens change). */
  private picked = new Map<TokenPick, number>();

  token(p: TokenPick): number {
    const known = this.picked.get(p);
    if (known !== undefined) return known;
    const token = this.resolve(p);
    this.picked.set(p, token);
    return token;
  }

  private resolve(p: TokenPick): number {
    if ('raw' in p) return p.raw;
    if ('live' in p) {
      const live = this.q.inspect().active;
      if (live.length > 0) return (live[p.live % live.length] as { token: number }).token;
    }
    const i = 'live' in p ? p.live : p.pick;
    return this.issued.length === 0 ? 10_000 + i : (this.issued[i % this.issued.length] as number);
  }

  session(p: SessionPick): Sess | undefined {
    if ('ghost' in p || this.sessions.length === 0) return undefined;
    return this.sessions[p.pick % this.sessions.length];
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

  step(t: TimeStep, o: Op): void {
    const q = this.q;
    const before = q.inspect();
    this.picked = new Map();
    const now = this.nowOf(t);
    const nowOk = Number.isSafeInteger(now) && now >= this.clock;
    const named = this.namedSession(o);
    const argsOk = this.argsOk(o) && named !== null;
    const closing = nowOk && argsOk && named !== undefined && this.endsBy(named, now, before);
    let result: unknown;
    let error: unknown;
    try {
      result = this.run(o, now);
    } catch (e) {
      error = e;
    }
    const after = q.inspect();
    expect(q.inspect()).toEqual(after);
    if (!nowOk || !argsOk) {
      const allowed =
        !nowOk && !argsOk
          ? [ClockError, ValidationError]
          : nowOk
            ? [ValidationError]
            : [ClockError];
      expect(
        allowed.some((c) => error instanceof c),
        `${String(error)} for ${o.op} at ${now}`,
      ).toBe(true);
      expect(after).toEqual(before);
    } else {
      if (closing) expect(error).toBeInstanceOf(SessionClosedError);
      else expect(error).toBeUndefined();
      // A SessionClosedError leaves exactly the effects of R3.
      if (error !== undefined) expect(after).toEqual(afterR3(this, before, now));
      for (const s of this.sessions) if (!s.ended && this.endsBy(s, now, before)) s.ended = true;
      this.clock = now;
      expect(after.queueTime).toBe(now);
      if (error === undefined) checkOutcome(this, o, now, result, before, after);
    }
    this.invariants(after);
  }

  /** The session an op names: undefined for none, null for one never opened (a bad argument). */
  namedSession(o: Op): Sess | undefined | null {
    const p = o.op === 'reserve' ? o.session : 'session' in o ? o.session : undefined;
    if (p === undefined) return undefined;
    // A reserve that picks a session while none is open reserves without one.
    if (o.op === 'reserve' && 'pick' in p && this.sessions.length === 0) return undefined;
    return this.session(p) ?? null;
  }

  private sessionId(o: Op): string | undefined {
    const s = this.namedSession(o);
    return s === null ? 'ghost' : s?.id;
  }

  private argsOk(o: Op): boolean {
    switch (o.op) {
      case 'publish':
        return okDelay(o.delay);
      case 'publishBatch':
        return o.jobs.every((j) => okDelay(j.delay) && j.id !== '');
      case 'reserve':
        return posInt(o.max) && posInt(o.visibility);
      case 'nack':
      case 'reject':
      case 'nackUpTo':
        return okDelay(o.delay);
      case 'extend':
        return posInt(o.visibility);
      default:
        return true;
    }
  }

  private run(o: Op, now: number): unknown {
    const q = this.q;
    const payload = () => {
      const p = { seq: this.seq++ };
      this.sent.push(p);
      return p;
    };
    this.sent = [];
    switch (o.op) {
      case 'publish':
        return q.publish(now, { id: o.id, delay: o.delay, payload: payload() });
      case 'publishBatch':
        return q.publishBatch(
          now,
          o.jobs.map((j) => ({ ...j, payload: payload() })),
        );
      case 'reserve':
        return q.reserve(now, { max: o.max, visibility: o.visibility, session: this.sessionId(o) });
      case 'ack':
        return q.ack(now, this.token(o.token));
      case 'ackMany':
        return q.ackMany(
          now,
          o.tokens.map((p) => this.token(p)),
        );
      case 'nack':
      case 'reject':
        return q[o.op](now, this.token(o.token), {
          requeue: o.requeue,
          delay: o.delay,
          reason: o.reason,
        });
      case 'extend':
        return q.extend(now, this.token(o.token), o.visibility);
      case 'open':
        return q.openSession(now, {
          prefetch: o.prefetch,
          timeout: o.timeout,
          ackTimeout: o.ackTimeout,
        });
      case 'heartbeat':
        return q.heartbeat(now, this.sessionId(o) as string);
      case 'close':
        return q.closeSession(now, this.sessionId(o) as string);
      case 'ackUpTo':
        return q.ackUpTo(now, this.sessionId(o) as string, this.token(o.token));
      case 'nackUpTo':
        return q.nackUpTo(now, this.sessionId(o) as string, this.token(o.token), {
          requeue: o.requeue,
          delay: o.delay,
        });
      case 'redrive':
        return q.redrive(now, o.ids);
      case 'purge':
        return q.purge(now);
      case 'stats':
        return q.stats(now);
    }
  }

  invariants(v: InspectView): void {
    for (const a of v.active) expect(a.deadline).toBeGreaterThan(v.queueTime);
    for (const d of v.delayed) expect(d.availableAt).toBeGreaterThan(v.queueTime);
    const all = [
      ...v.ready,
      ...v.delayed.map((d) => d.id),
      ...v.active.map((a) => a.id),
      ...v.dead.map((d) => d.id),
    ];
    expect(new Set(all).size).toBe(all.length);
    expect(new Set(all)).toEqual(this.present);
    const tokens = v.active.map((a) => a.token);
    expect([...tokens].sort((x, y) => x - y)).toEqual(tokens);
    expect(new Set(tokens).size).toBe(tokens.length);
    for (const tok of tokens) expect(tok).toBeLessThan(this.nextToken);
    expect(v.active.length).toBeLessThanOrEqual(this.cfg.prefetch);
    for (const s of this.sessions) {
      const mine = v.active.filter((a) => a.session === s.id);
      expect(mine.length).toBeLessThanOrEqual(s.ended ? 0 : s.prefetch);
    }
    for (const a of v.active) expect(a.deliveryCount).toBe(this.count.get(a.id));
    for (const d of v.dead) {
      expect(d.deliveryCount).toBe(this.count.get(d.id));
      if (d.reason === 'max-deliveries')
        expect(d.deliveryCount).toBeGreaterThanOrEqual(this.cfg.maxDeliveries);
    }
    for (const id of [...v.ready, ...v.delayed.map((d) => d.id)]) {
      expect(this.count.get(id)).toBeLessThan(this.cfg.maxDeliveries);
    }
  }
}
