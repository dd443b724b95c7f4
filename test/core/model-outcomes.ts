/** Per-operation checks of the property tests: what each accepted call must have returned and done. */
import { expect } from 'vitest';
import type { InspectView } from '../../src/core/types.js';
import type { Active, Entry, Op, Sess, Shadow } from './model-check.js';

type Delivered = { token: number; id: string; payload: unknown; deadline: number } & {
  deliveryCount: number;
  redelivered: boolean;
};

/**
 * The exact state after R3 at `now` (R3, R12, R13, R16): sessions that end release all their
 * deliveries, due deliveries are reclaimed; both return in token order to the front of ready (or
 * die at the limit, in token order), then due delayed jobs go to the back in promotion order.
 */
export function afterR3(sh: Shadow, before: InspectView, now: number): InspectView {
  const ending = new Set(sh.sessions.filter((s) => sh.endsBy(s, now, before)).map((s) => s.id));
  const lost = (a: Active) =>
    a.deadline <= now || (a.session !== undefined && ending.has(a.session));
  const back = before.active.filter(lost);
  const died = back.filter((a) => a.deliveryCount >= sh.cfg.maxDeliveries);
  const due = before.delayed.filter((d) => d.availableAt <= now).map((d) => d.id);
  return {
    queueTime: now,
    ready: [...back.filter((a) => !died.includes(a)).map((a) => a.id), ...before.ready, ...due],
    delayed: before.delayed.filter((d) => d.availableAt > now),
    active: before.active.filter((a) => !lost(a)),
    dead: [
      ...before.dead,
      ...died.map((a) => ({ id: a.id, reason: 'max-deliveries', deliveryCount: a.deliveryCount })),
    ],
  };
}

/** A token that R8 calls live at `now` for sure (its session, if any, does not end now). */
function surelyLive(
  sh: Shadow,
  a: Active | undefined,
  now: number,
  before: InspectView,
): a is Active {
  if (a === undefined || a.deadline <= now) return false;
  const s = sh.sessions.find((x) => x.id === a.session);
  return s === undefined || !sh.endsBy(s, now, before);
}

function published(
  sh: Shadow,
  r: { id: string; duplicate: boolean },
  e: { id?: string; delay: number },
  sent: unknown,
  now: number,
  after: InspectView,
): void {
  if (e.id !== undefined) expect(r.id).toBe(e.id);
  expect(r.duplicate).toBe(sh.present.has(r.id));
  if (r.duplicate) return;
  sh.present.add(r.id);
  sh.count.set(r.id, 0);
  sh.payload.set(r.id, sent);
  if (e.delay > 0) expect(after.delayed).toContainEqual({ id: r.id, availableAt: now + e.delay });
  else expect(after.ready).toContain(r.id);
}

function completed(
  sh: Shadow,
  token: number,
  ok: boolean,
  now: number,
  before: InspectView,
  after: InspectView,
): Active | undefined {
  const a = before.active.find((x) => x.token === token);
  expect(after.active.some((x) => x.token === token)).toBe(false);
  if (ok) expect(a !== undefined && a.deadline > now).toBe(true);
  else expect(surelyLive(sh, a, now, before)).toBe(false);
  return ok ? a : undefined;
}

export function checkOutcome(
  sh: Shadow,
  o: Op,
  now: number,
  result: unknown,
  before: InspectView,
  after: InspectView,
): void {
  const cfg = sh.cfg;
  const base = afterR3(sh, before, now);
  const without = (gone: Set<number>) => base.active.filter((a) => !gone.has(a.token));
  const ids = (v: InspectView) =>
    new Set([
      ...v.ready,
      ...v.delayed.map((d) => d.id),
      ...v.active.map((a) => a.id),
      ...v.dead.map((d) => d.id),
    ]);
  switch (o.op) {
    case 'publish':
      published(sh, result as { id: string; duplicate: boolean }, o, sh.sent[0], now, after);
      break;
    case 'publishBatch': {
      const rs = result as { id: string; duplicate: boolean }[];
      expect(rs).toHaveLength(o.jobs.length);
      rs.forEach((r, i) => {
        published(sh, r, o.jobs[i] as Entry, sh.sent[i], now, after);
      });
      break;
    }
    case 'reserve': {
      const ds = result as Delivered[];
      const s = sh.namedSession(o) ?? undefined;
      expect(ds.length).toBeLessThanOrEqual(o.max);
      // R6 + I9: from the front of ready as R3 left it, and nothing else changed.
      expect(ds.map((d) => d.id)).toEqual(base.ready.slice(0, ds.length));
      expect(after).toEqual({
        ...base,
        ready: base.ready.slice(ds.length),
        active: [
          ...base.active,
          ...ds.map((d) => ({
            token: d.token,
            id: d.id,
            deadline: d.deadline,
            deliveryCount: d.deliveryCount,
            ...(s ? { session: s.id } : {}),
          })),
        ],
      });
      for (const d of ds) {
        expect(d.token).toBe(sh.nextToken++);
        expect(d.deadline).toBe(now + Math.min(o.visibility ?? cfg.visibility, cfg.maxLease));
        expect(d.deliveryCount).toBe((sh.count.get(d.id) ?? Number.NaN) + 1);
        expect(d.redelivered).toBe(d.deliveryCount > 1);
        expect(d.payload).toEqual(sh.payload.get(d.id));
        expect(after.active).toContainEqual({
          token: d.token,
          id: d.id,
          deadline: d.deadline,
          deliveryCount: d.deliveryCount,
          ...(s ? { session: s.id } : {}),
        });
        sh.count.set(d.id, d.deliveryCount);
        sh.issued.push(d.token);
        sh.deliveredAt.set(d.token, now);
      }
      if (ds.length < o.max) {
        const mine = s ? after.active.filter((a) => a.session === s.id).length : 0;
        const full = after.active.length >= cfg.prefetch || (s !== undefined && mine >= s.prefetch);
        expect(after.ready.length === 0 || full).toBe(true);
      }
      break;
    }
    case 'ack':
    case 'ackMany': {
      const tokens = o.op === 'ack' ? [sh.token(o.token)] : o.tokens.map((p) => sh.token(p));
      const oks = o.op === 'ack' ? [result as boolean] : (result as boolean[]);
      expect(oks).toHaveLength(tokens.length);
      tokens.forEach((tok, i) => {
        if (tokens.slice(0, i).includes(tok)) {
          expect(oks[i]).toBe(false);
          return;
        }
        const a = completed(sh, tok, oks[i] as boolean, now, before, after);
        if (a) sh.present.delete(a.id);
      });
      expect(after).toEqual({ ...base, active: without(new Set(tokens.filter((_, i) => oks[i]))) });
      break;
    }
    case 'nack':
    case 'reject': {
      const a = completed(sh, sh.token(o.token), result as boolean, now, before, after);
      if (!a) break;
      nacked(sh, a.id, o, now, after);
      const died = !o.requeue || (sh.count.get(a.id) as number) >= cfg.maxDeliveries;
      if (died) expect(after.dead.at(-1)?.id).toBe(a.id);
      else if (o.delay === 0) expect(after.ready[0]).toBe(a.id);
      break;
    }
    case 'extend': {
      const tok = sh.token(o.token);
      const a = before.active.find((x) => x.token === tok);
      if (result === null) {
        expect(surelyLive(sh, a, now, before)).toBe(false);
        expect(after).toEqual(base);
        break;
      }
      expect(a !== undefined && a.deadline > now).toBe(true);
      const bound = (sh.deliveredAt.get(tok) as number) + cfg.maxLease;
      expect(result).toBe(Math.min(now + o.visibility, bound));
      expect(after).toEqual({
        ...base,
        active: base.active.map((x) => (x.token === tok ? { ...x, deadline: result } : x)),
      });
      break;
    }
    case 'open': {
      expect(after).toEqual(base);
      expect(typeof result).toBe('string');
      expect(sh.sessions.some((s) => s.id === result)).toBe(false);
      sh.sessions.push({
        id: result as string,
        prefetch: o.prefetch ?? Number.POSITIVE_INFINITY,
        timeout: o.timeout,
        ackTimeout: o.ackTimeout,
        lastHb: now,
        ended: false,
      });
      break;
    }
    case 'heartbeat':
      expect(after).toEqual(base);
      (sh.namedSession(o) as Sess).lastHb = now;
      break;
    case 'close':
    case 'ackUpTo':
    case 'nackUpTo': {
      const s = sh.namedSession(o) as Sess;
      const limit = 'token' in o ? sh.token(o.token) : Number.POSITIVE_INFINITY;
      const hit = before.active.filter(
        (a) => a.session === s.id && a.token <= limit && a.deadline > now,
      );
      expect(result).toBe(hit.length);
      for (const a of hit) expect(after.active.some((x) => x.token === a.token)).toBe(false);
      const rest = without(new Set(hit.map((a) => a.token)));
      if (o.op === 'ackUpTo') expect(after).toEqual({ ...base, active: rest });
      if (o.op === 'close') {
        // R16: released at once, in token order, to the front (or dead at the limit, R13).
        const died = hit.filter((a) => a.deliveryCount >= cfg.maxDeliveries);
        const reason = 'max-deliveries';
        expect(after).toEqual({
          ...base,
          ready: [...hit.filter((a) => !died.includes(a)).map((a) => a.id), ...base.ready],
          active: rest,
          dead: [
            ...base.dead,
            ...died.map((a) => ({ id: a.id, reason, deliveryCount: a.deliveryCount })),
          ],
        });
      }
      if (o.op === 'ackUpTo') for (const a of hit) sh.present.delete(a.id);
      if (o.op === 'nackUpTo') for (const a of hit) nacked(sh, a.id, o, now, after);
      if (o.op === 'close') s.ended = true;
      break;
    }
    case 'redrive': {
      const wanted = (id: string) => o.ids === undefined || o.ids.includes(id);
      const moved = base.dead.map((d) => d.id).filter(wanted);
      expect(result).toBe(moved.length);
      const moves = (id: string) => moved.includes(id);
      expect({ ...after, ready: [...after.ready.slice(0, base.ready.length)] }).toEqual({
        ...base,
        dead: base.dead.filter((d) => !moves(d.id)),
      });
      // R14: to the back of ready (the order among them is not pinned down by SPEC.md).
      expect([...after.ready.slice(base.ready.length)].sort()).toEqual([...moved].sort());
      for (const id of moved) sh.count.set(id, 0);
      break;
    }
    case 'purge': {
      expect(after).toEqual({ ...base, dead: [] });
      expect(result).toBe(base.dead.length);
      for (const d of base.dead) sh.present.delete(d.id);
      break;
    }
    case 'stats': {
      expect(after).toEqual(base);
      const st = result as Record<string, unknown>;
      expect(st).toMatchObject({
        queueTime: now,
        ready: after.ready.length,
        delayed: after.delayed.length,
        active: after.active.length,
        dead: after.dead.length,
        sessions: sh.sessions.filter((s) => !s.ended).length,
      });
      break;
    }
  }
  expect(ids(after)).toEqual(sh.present);
}

/** Where a nacked job must be after the nack (R9, R13). */
function nacked(
  sh: Shadow,
  id: string,
  o: { requeue: boolean; delay: number; reason?: string },
  now: number,
  after: InspectView,
): void {
  const count = sh.count.get(id) as number;
  if (!o.requeue) {
    const reason = o.reason ?? 'rejected';
    expect(after.dead).toContainEqual({ id, reason, deliveryCount: count });
  } else if (count >= sh.cfg.maxDeliveries) {
    expect(after.dead).toContainEqual({ id, reason: 'max-deliveries', deliveryCount: count });
  } else if (o.delay > 0) {
    expect(after.delayed).toContainEqual({ id, availableAt: now + o.delay });
  } else {
    expect(after.ready).toContain(id);
  }
}
