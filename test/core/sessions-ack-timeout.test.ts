import { describe, expect, it } from 'vitest';
import { SessionClosedError } from '../../src/core/errors.js';
import { expectError, queueWith, view } from './helpers.js';

const CLOSED = 'SESSION_CLOSED';

// Kept apart from sessions.test.ts: a hang in the ackTimeout path must not hide the other results.
describe('sessions: ackTimeout (R16)', () => {
  it('R16 ackTimeout ends the session when a live delivery is held that long', () => {
    const q = queueWith(['a', 'b', 'c']);
    const s = q.openSession(0, { ackTimeout: 10 });
    q.reserve(2, { session: s, visibility: 100 });
    q.reserve(5, { session: s, visibility: 100 });
    expect(q.stats(11)).toMatchObject({ sessions: 1, active: 2 });
    expect(q.stats(12)).toMatchObject({ sessions: 0, active: 0, sessionReleases: 2 });
    expect(q.inspect()).toEqual(view(12, { ready: ['a', 'b', 'c'] }));
    expectError(() => q.reserve(12, { session: s }), SessionClosedError, CLOSED);
  });

  it('R16 ackTimeout ignores deliveries acked or expired before their ack timeout', () => {
    const q = queueWith(['a', 'b', 'c']);
    const s = q.openSession(0, { ackTimeout: 10 });
    q.reserve(0, { session: s, visibility: 100 }); // 1 a
    q.reserve(0, { session: s, visibility: 3 }); // 2 b: expires at 3, before 10
    expect(q.ack(1, 1)).toBe(true);
    expect(q.stats(20)).toMatchObject({ sessions: 1, expiries: 1, sessionReleases: 0 });
    expect(q.reserve(20, { session: s })[0]).toMatchObject({ token: 3, id: 'b' });
  });

  it('R16 a delivery live at deliveredAt + ackTimeout ends the session even if seen later', () => {
    const q = queueWith(['a'], { maxDeliveries: 1 });
    const s = q.openSession(0, { ackTimeout: 10 });
    q.reserve(0, { session: s, visibility: 15 });
    expect(q.stats(20)).toMatchObject({ sessions: 0, sessionReleases: 1, expiries: 0 });
    expect(q.deadLetters()).toMatchObject([
      {
        id: 'a',
        reason: 'max-deliveries',
        history: [{ token: 1, deliveredAt: 0, outcome: 'session-ended' }],
      },
    ]);
    expectError(() => q.reserve(20, { session: s }), SessionClosedError, CLOSED);
  });
});
