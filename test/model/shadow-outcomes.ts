/** Per-call checks of the model runs: what each accepted call must have returned and done. */
import { expect } from 'vitest';
import type { PublishInput, PurgeQueueResult } from '../../src/core/index.js';
import type { InspectView } from '../../src/core/types.js';
import type { Call, NackSpec } from './operations.js';
import type { Active, Sess, Shadow } from './shadow.js';

type Delivered = { token: number; id: string; payload: unknown; deadline: number } & {
  deliveryCount: number;
  redelivered: boolean;
};

/** A nack's options with their defaults (R9). */
interface Disposition {
  requeue: boolean;
  delay: number;
  reason?: string;
  attempted: boolean;
}

function disposition(options: NackSpec | undefined): Disposition {
  return {
    requeue: options?.requeue ?? true,
    delay: options?.delay ?? 0,
    ...(options?.reason === undefined ? {} : { reason: options.reason }),
    attempted: options?.attempted ?? true,
  };
}

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
  e: PublishInput,
  now: number,
  after: InspectView,
): void {
  if (e.id !== undefined) expect(r.id).toBe(e.id);
  expect(r.duplicate).toBe(sh.isDuplicate(r.id, now));
  if (r.duplicate) return;
  sh.present.add(r.id);
  sh.count.set(r.id, 0);
  sh.payload.set(r.id, e.payload);
  const delay = e.delay ?? 0;
  if (delay > 0) expect(after.delayed).toContainEqual({ id: r.id, availableAt: now + delay });
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

/** R4: an acked id is remembered for dedupWindow. */
function acked(sh: Shadow, id: string, now: number): void {
  sh.present.delete(id);
  if (sh.cfg.dedupWindow > 0) sh.remembered.set(id, now + sh.cfg.dedupWindow);
}

export function checkOutcome(
  sh: Shadow,
  call: Call,
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
  switch (call.name) {
    case 'publish':
      published(sh, result as { id: string; duplicate: boolean }, call.job, now, after);
      break;
    case 'publishBatch': {
      const rs = result as { id: string; duplicate: boolean }[];
      expect(rs).toHaveLength(call.jobs.length);
      rs.forEach((r, i) => {
        published(sh, r, call.jobs[i] as PublishInput, now, after);
      });
      break;
    }
    case 'reserve': {
      const ds = result as Delivered[];
      const s = sh.namedSession(call) ?? undefined;
      const max = call.max ?? 1;
      expect(ds.length).toBeLessThanOrEqual(max);
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
        expect(d.deadline).toBe(now + Math.min(call.visibility ?? cfg.visibility, cfg.maxLease));
        expect(d.deliveryCount).toBe((sh.count.get(d.id) ?? Number.NaN) + 1);
        expect(d.redelivered).toBe(d.deliveryCount > 1);
        expect(d.payload).toEqual(sh.payload.get(d.id));
        sh.count.set(d.id, d.deliveryCount);
        sh.deliveredAt.set(d.token, now);
      }
      if (ds.length < max) {
        const mine = s ? after.active.filter((a) => a.session === s.id).length : 0;
        const full = after.active.length >= cfg.prefetch || (s !== undefined && mine >= s.prefetch);
        expect(after.ready.length === 0 || full).toBe(true);
      }
      break;
    }
    case 'ack':
    case 'ackMany': {
      const tokens = call.name === 'ack' ? [call.token] : call.tokens;
      const oks = call.name === 'ack' ? [result as boolean] : (result as boolean[]);
      expect(oks).toHaveLength(tokens.length);
      tokens.forEach((tok, i) => {
        if (tokens.slice(0, i).includes(tok)) {
          expect(oks[i]).toBe(false);
          return;
        }
        const a = completed(sh, tok, oks[i] as boolean, now, before, after);
        if (a) acked(sh, a.id, now);
      });
      expect(after).toEqual({ ...base, active: without(new Set(tokens.filter((_, i) => oks[i]))) });
      break;
    }
    case 'nack':
    case 'reject': {
      const a = completed(sh, call.token, result as boolean, now, before, after);
      if (!a) {
        expect(after).toEqual(base);
        break;
      }
      const o = disposition(call.options);
      nacked(sh, a.id, o, now, after);
      const died =
        !o.requeue || (o.attempted && (sh.count.get(a.id) as number) >= cfg.maxDeliveries);
      if (died) expect(after.dead.at(-1)?.id).toBe(a.id);
      else if (o.delay === 0) expect(after.ready[0]).toBe(a.id);
      break;
    }
    case 'extend': {
      const tok = call.token;
      const a = before.active.find((x) => x.token === tok);
      if (result === null) {
        expect(surelyLive(sh, a, now, before)).toBe(false);
        expect(after).toEqual(base);
        break;
      }
      expect(a !== undefined && a.deadline > now).toBe(true);
      const bound = (sh.deliveredAt.get(tok) as number) + cfg.maxLease;
      expect(result).toBe(Math.min(now + call.visibility, bound));
      expect(after).toEqual({
        ...base,
        active: base.active.map((x) => (x.token === tok ? { ...x, deadline: result } : x)),
      });
      break;
    }
    case 'openSession': {
      expect(after).toEqual(base);
      expect(typeof result).toBe('string');
      expect(sh.sessions.some((s) => s.id === result)).toBe(false);
      const options = call.options ?? {};
      const finite = (n: number | undefined) => (n === Number.POSITIVE_INFINITY ? undefined : n);
      sh.sessions.push({
        id: result as string,
        prefetch: options.prefetch ?? Number.POSITIVE_INFINITY,
        timeout: finite(options.timeout),
        ackTimeout: finite(options.ackTimeout),
        lastHb: now,
        ended: false,
      });
      break;
    }
    case 'heartbeat':
      expect(after).toEqual(base);
      (sh.namedSession(call) as Sess).lastHb = now;
      break;
    case 'closeSession':
    case 'ackUpTo':
    case 'nackUpTo': {
      const s = sh.namedSession(call) as Sess;
      const limit = 'token' in call ? call.token : Number.POSITIVE_INFINITY;
      const hit = before.active.filter(
        (a) => a.session === s.id && a.token <= limit && a.deadline > now,
      );
      expect(result).toBe(hit.length);
      for (const a of hit) expect(after.active.some((x) => x.token === a.token)).toBe(false);
      const rest = without(new Set(hit.map((a) => a.token)));
      if (call.name === 'ackUpTo') expect(after).toEqual({ ...base, active: rest });
      if (call.name === 'closeSession') {
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
      if (call.name === 'ackUpTo') for (const a of hit) acked(sh, a.id, now);
      if (call.name === 'nackUpTo') {
        for (const a of hit) nacked(sh, a.id, disposition(call.options), now, after);
      }
      if (call.name === 'closeSession') s.ended = true;
      break;
    }
    case 'redrive': {
      const wanted = (id: string) => call.ids === undefined || call.ids.includes(id);
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
      const wanted = (id: string) => call.ids === undefined || call.ids.includes(id);
      const gone = base.dead.map((d) => d.id).filter(wanted);
      expect(after).toEqual({ ...base, dead: base.dead.filter((d) => !wanted(d.id)) });
      expect(result).toBe(gone.length);
      for (const id of gone) sh.present.delete(id);
      break;
    }
    case 'purgeQueue': {
      // R19: everything but the dead goes (the dead too when asked); sessions stay open.
      const removed: PurgeQueueResult = {
        ready: base.ready.length,
        delayed: base.delayed.length,
        active: base.active.length,
        dead: call.dead ? base.dead.length : 0,
      };
      expect(result).toEqual(removed);
      const kept = call.dead ? [] : base.dead;
      expect(after).toEqual({ ...base, ready: [], delayed: [], active: [], dead: kept });
      const keptIds = new Set(kept.map((d) => d.id));
      for (const id of [...sh.present]) if (!keptIds.has(id)) sh.present.delete(id);
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

/** Where a nacked job must be after the nack (R9, R13, R33). */
function nacked(sh: Shadow, id: string, o: Disposition, now: number, after: InspectView): void {
  // R33: given back unworked, the delivery is no delivery of the job; it never dies of the count.
  if (!o.attempted) sh.count.set(id, (sh.count.get(id) as number) - 1);
  const count = sh.count.get(id) as number;
  if (!o.requeue) {
    const reason = o.reason ?? 'rejected';
    expect(after.dead).toContainEqual({ id, reason, deliveryCount: count });
  } else if (o.attempted && count >= sh.cfg.maxDeliveries) {
    expect(after.dead).toContainEqual({ id, reason: 'max-deliveries', deliveryCount: count });
  } else if (o.delay > 0) {
    expect(after.delayed).toContainEqual({ id, availableAt: now + o.delay });
  } else {
    expect(after.ready).toContain(id);
  }
}
