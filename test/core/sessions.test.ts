import { describe, expect, it } from 'vitest';
import { SessionClosedError } from '../../src/core/errors.js';
import { LeaseQueue } from '../../src/core/index.js';
import { expectError, queueWith, view } from './helpers.js';

const CLOSED = 'SESSION_CLOSED';

describe('bulk completion (R11)', () => {
  it('R11 ackUpTo acks the live deliveries of that session with token <= the given one', () => {
    const q = queueWith(['a', 'b', 'c', 'd', 'e']);
    const s1 = q.openSession(0);
    const s2 = q.openSession(0);
    expect(s1).not.toBe(s2);
    expect(q.reserve(0, { max: 3, session: s1 }).map((d) => d.token)).toEqual([1, 2, 3]);
    expect(q.reserve(0, { session: s2 }).map((d) => d.token)).toEqual([4]);
    expect(q.reserve(0).map((d) => d.token)).toEqual([5]);
    expect(q.ackUpTo(1, s1, 2)).toBe(2);
    expect(q.inspect().active.map((a) => [a.token, a.session])).toEqual([
      [3, s1],
      [4, s2],
      [5, undefined],
    ]);
    expect(q.ackUpTo(1, s1, 10)).toBe(1);
    expect(q.ackUpTo(1, s2, 5)).toBe(1);
    expect(q.ackUpTo(1, s2, 5)).toBe(0);
    expect(q.inspect()).toEqual(
      view(1, { active: [{ token: 5, id: 'e', deadline: 30000, deliveryCount: 1 }] }),
    );
    expect(q.stats(1)).toMatchObject({ acks: 4, staleAcks: 0, active: 1 });
  });

  it('R11 ackUpTo skips the session deliveries that already expired', () => {
    const q = queueWith(['a', 'b']);
    const s = q.openSession(0);
    q.reserve(0, { session: s, visibility: 2 });
    q.reserve(0, { session: s, visibility: 10 });
    expect(q.ackUpTo(5, s, 2)).toBe(1);
    expect(q.inspect()).toEqual(view(5, { ready: ['a'] }));
  });

  it('R11 nackUpTo requeues only that session, ahead of the ready jobs', () => {
    const q = queueWith(['a', 'b', 'c', 'd']);
    const s1 = q.openSession(0);
    const s2 = q.openSession(0);
    q.reserve(0, { max: 2, session: s1 });
    q.reserve(0, { session: s2 });
    expect(q.nackUpTo(1, s1, 3, {})).toBe(2);
    const seen = q.inspect();
    expect([...seen.ready.slice(0, 2)].sort()).toEqual(['a', 'b']);
    expect(seen.ready.slice(2)).toEqual(['d']);
    expect(seen.active).toEqual([
      { token: 3, id: 'c', deadline: 30000, deliveryCount: 1, session: s2 },
    ]);
  });

  it('R11 nackUpTo without requeue dead-letters with the given reason', () => {
    const q = queueWith(['a', 'b', 'c']);
    const s = q.openSession(0);
    q.reserve(0, { max: 3, session: s });
    expect(q.nackUpTo(2, s, 2, { requeue: false, reason: 'bulk' })).toBe(2);
    const seen = q.inspect();
    expect([...seen.dead].sort((x, y) => x.id.localeCompare(y.id))).toEqual([
      { id: 'a', reason: 'bulk', deliveryCount: 1 },
      { id: 'b', reason: 'bulk', deliveryCount: 1 },
    ]);
    expect(seen.active.map((a) => a.token)).toEqual([3]);
  });

  it('R11 ackMany answers per token; repeated and stale tokens are false', () => {
    const q = queueWith(['a', 'b', 'c'], { visibility: 5 });
    q.reserve(0, { max: 2 });
    q.reserve(0, { visibility: 1 });
    expect(q.ackMany(2, [1, 999, 1, 3, 2])).toEqual([true, false, false, false, true]);
    expect(q.inspect()).toEqual(view(2, { ready: ['c'] }));
    expect(q.stats(2)).toMatchObject({ acks: 2, staleAcks: 3, expiries: 1 });
  });
});

describe('sessions (R16)', () => {
  it('R16 a session prefetch bounds its own live deliveries, not the others', () => {
    const q = queueWith(['a', 'b', 'c', 'd', 'e', 'f']);
    const s = q.openSession(0, { prefetch: 2 });
    expect(q.reserve(0, { max: 5, session: s }).map((d) => d.id)).toEqual(['a', 'b']);
    expect(q.reserve(0, { max: 5, session: s })).toEqual([]);
    expect(q.reserve(0, { max: 3 }).map((d) => d.id)).toEqual(['c', 'd', 'e']);
    expect(q.ack(1, 2)).toBe(true);
    expect(q.reserve(1, { max: 5, session: s }).map((d) => [d.token, d.id])).toEqual([[6, 'f']]);
    expect(
      q
        .inspect()
        .active.filter((a) => a.session === s)
        .map((a) => a.token),
    ).toEqual([1, 6]);
  });

  it('R16 closeSession releases its live deliveries at once, in token order, to the front', () => {
    const q = queueWith(['a', 'b', 'c', 'd']);
    const s = q.openSession(0);
    q.reserve(0, { max: 2, session: s });
    q.reserve(0);
    expect(q.closeSession(1, s)).toBe(2);
    expect(q.inspect()).toEqual(
      view(1, {
        ready: ['a', 'b', 'd'],
        active: [{ token: 3, id: 'c', deadline: 30000, deliveryCount: 1 }],
      }),
    );
    expect(q.ack(1, 1)).toBe(false);
    expect(q.reserve(2)[0]).toMatchObject({
      token: 4,
      id: 'a',
      deliveryCount: 2,
      redelivered: true,
    });
    expect(q.stats(2)).toMatchObject({ sessions: 0, sessionReleases: 2, expiries: 0 });
  });

  it('R16 every operation naming an ended session throws SessionClosedError', () => {
    const q = queueWith(['a']);
    const s = q.openSession(0);
    expect(q.closeSession(0, s)).toBe(0);
    const before = q.inspect();
    expectError(() => q.reserve(1, { session: s }), SessionClosedError, CLOSED);
    expectError(() => q.heartbeat(2, s), SessionClosedError, CLOSED);
    expectError(() => q.ackUpTo(3, s, 10), SessionClosedError, CLOSED);
    expectError(() => q.nackUpTo(4, s, 10, {}), SessionClosedError, CLOSED);
    const err = expectError(() => q.closeSession(5, s), SessionClosedError, CLOSED);
    expect(err.session).toBe(s);
    expect(q.inspect()).toEqual({ ...before, queueTime: 5 });
  });

  it('R16 the heartbeat timeout ends a session at lastHeartbeat + timeout (opening counts)', () => {
    const q = queueWith(['a', 'b']);
    const s = q.openSession(0, { timeout: 10 });
    q.reserve(0, { session: s, visibility: 100 });
    expect(q.stats(9)).toMatchObject({ sessions: 1, active: 1 });
    expect(q.stats(10)).toMatchObject({ sessions: 0, active: 0, sessionReleases: 1 });
    expect(q.inspect()).toEqual(view(10, { ready: ['a', 'b'] }));
    expectError(() => q.heartbeat(10, s), SessionClosedError, CLOSED);
  });

  it('R16 a heartbeat restarts the timeout', () => {
    const q = queueWith(['a', 'b']);
    const s = q.openSession(0, { timeout: 10 });
    q.heartbeat(6, s);
    expect(q.reserve(15, { session: s, visibility: 100 })[0]).toMatchObject({ token: 1, id: 'a' });
    expect(q.stats(15)).toMatchObject({ sessions: 1, active: 1 });
    q.stats(16);
    expect(q.inspect()).toEqual(view(16, { ready: ['a', 'b'] }));
    expectError(() => q.reserve(16, { session: s }), SessionClosedError, CLOSED);
  });

  it('R16 released deliveries whose deadline passed before the end count as expired', () => {
    const q = queueWith(['a', 'b', 'c'], { maxDeliveries: 1 });
    const s = q.openSession(0, { timeout: 10 });
    q.reserve(0, { session: s, visibility: 5 });
    q.reserve(0, { session: s, visibility: 100 });
    expect(q.stats(10)).toMatchObject({ expiries: 1, sessionReleases: 1, sessions: 0, dead: 2 });
    expect(q.deadLetters()).toMatchObject([
      { id: 'a', reason: 'max-deliveries', history: [{ token: 1, outcome: 'expired' }] },
      {
        id: 'b',
        reason: 'max-deliveries',
        deadAt: 10,
        history: [{ token: 2, deliveredAt: 0, endedAt: 10, outcome: 'session-ended' }],
      },
    ]);
    expect(q.inspect().ready).toEqual(['c']);
  });

  it('R16 a session ending by timeout releases in token order with the expired ones (R12)', () => {
    const q = queueWith(['a', 'b', 'c', 'd']);
    const s = q.openSession(0, { timeout: 10 });
    q.reserve(0, { visibility: 10 }); // 1 a, no session
    q.reserve(0, { session: s, visibility: 4 }); // 2 b
    q.reserve(0, { session: s, visibility: 50 }); // 3 c
    q.stats(10);
    expect(q.inspect()).toEqual(view(10, { ready: ['a', 'b', 'c', 'd'] }));
  });

  it('R16 SessionClosedError comes after R3: the clock advanced and expired leases returned', () => {
    const q = queueWith(['x', 'y']);
    const s = q.openSession(0, { timeout: 5 });
    q.reserve(0, { visibility: 3 });
    expectError(() => q.reserve(7, { session: s }), SessionClosedError, CLOSED);
    expect(q.queueTime).toBe(7);
    expect(q.inspect()).toEqual(view(7, { ready: ['x', 'y'] }));
    expect(q.reserve(7)[0]).toMatchObject({ token: 2, id: 'x', deliveryCount: 2 });
  });

  it('R16 closeSession counts only live deliveries, and R13 applies to the released ones', () => {
    const q = queueWith(['a', 'b', 'c'], { maxDeliveries: 1 });
    const s = q.openSession(0);
    q.reserve(0, { session: s, visibility: 2 });
    q.reserve(0, { session: s, visibility: 10 });
    expect(q.closeSession(5, s)).toBe(1);
    expect(q.inspect()).toEqual(
      view(5, {
        ready: ['c'],
        dead: [
          { id: 'a', reason: 'max-deliveries', deliveryCount: 1 },
          { id: 'b', reason: 'max-deliveries', deliveryCount: 1 },
        ],
      }),
    );
    expect(q.stats(5)).toMatchObject({ expiries: 1, sessionReleases: 1 });
  });

  it('R16 the sessions gauge counts open sessions', () => {
    const q = new LeaseQueue();
    const ids = [q.openSession(0), q.openSession(0, { timeout: 3 }), q.openSession(1)];
    expect(new Set(ids).size).toBe(3);
    expect(q.stats(2).sessions).toBe(3);
    expect(q.stats(3).sessions).toBe(2);
    q.closeSession(4, ids[0] ?? '');
    expect(q.stats(4).sessions).toBe(1);
  });
});
