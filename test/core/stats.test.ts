import { describe, expect, it } from 'vitest';
import { ClockError } from '../../src/core/errors.js';
import { LeaseQueue } from '../../src/core/index.js';
import { expectError, queueWith } from './helpers.js';

const ZERO = {
  ready: 0,
  delayed: 0,
  active: 0,
  dead: 0,
  waiting: 0,
  sessions: 0,
  oldestReadyAge: 0,
  published: 0,
  duplicates: 0,
  deliveries: 0,
  redeliveries: 0,
  acks: 0,
  nacks: 0,
  expiries: 0,
  sessionReleases: 0,
  extensions: 0,
  staleAcks: 0,
  staleNacks: 0,
  staleExtends: 0,
  redriven: 0,
  purged: 0,
  autoAcked: 0,
  processingTime: { count: 0, sum: 0, max: 0 },
};

describe('observability (R17)', () => {
  it('R17 a new queue reports zero everywhere', () => {
    const q = new LeaseQueue();
    const stats = q.stats(0);
    expect(stats).toMatchObject({ queueTime: 0, ...ZERO });
    expect(Object.values(stats.deadLetters).every((n) => n === 0)).toBe(true);
  });

  it('R17 every counter and gauge after a scripted run', () => {
    const q = new LeaseQueue({ visibility: 10, maxDeliveries: 2 });
    q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    expect(q.publish(0, { id: 'a' }).duplicate).toBe(true);
    q.publish(0, { id: 'd', delay: 50 });
    expect(q.reserve(0, { max: 2 }).map((d) => d.token)).toEqual([1, 2]);
    expect(q.ack(4, 1)).toBe(true); // processing 4
    expect(q.ack(4, 1)).toBe(false);
    expect(q.nack(5, 2)).toBe(true);
    expect(q.reserve(5, { max: 2 }).map((d) => [d.token, d.id, d.redelivered])).toEqual([
      [3, 'b', true],
      [4, 'c', false],
    ]);
    expect(q.extend(6, 4, 20)).toBe(26);
    expect(q.extend(7, 999, 5)).toBeNull();
    expect(q.nack(7, 999)).toBe(false);
    q.stats(15); // token 3 expires; b (deliveryCount 2) is dead
    expect(q.ack(16, 4)).toBe(true); // processing 11
    q.publish(16, { id: 'e' });
    q.reserve(16); // 5 e
    expect(q.nack(16, 5, { requeue: false })).toBe(true);
    expect(q.stats(20)).toMatchObject({
      queueTime: 20,
      ready: 0,
      delayed: 1,
      active: 0,
      dead: 2,
      waiting: 0,
      sessions: 0,
      oldestReadyAge: 0,
      published: 5,
      duplicates: 1,
      deliveries: 5,
      redeliveries: 1,
      acks: 2,
      nacks: 2,
      expiries: 1,
      sessionReleases: 0,
      extensions: 1,
      staleAcks: 1,
      staleNacks: 1,
      staleExtends: 1,
      redriven: 0,
      purged: 0,
      autoAcked: 0,
      deadLetters: { 'max-deliveries': 1, rejected: 1 },
      processingTime: { count: 2, sum: 15, max: 11 },
    });
    expect(q.redrive(21, ['b'])).toBe(1);
    expect(q.purge(22)).toBe(1);
    expect(q.stats(25)).toMatchObject({
      ready: 1,
      dead: 0,
      oldestReadyAge: 4,
      redriven: 1,
      purged: 1,
      deadLetters: { 'max-deliveries': 1, rejected: 1 },
    });
  });

  it('R17 oldestReadyAge is measured from the longest-waiting ready job', () => {
    const q = new LeaseQueue();
    q.publish(2, { id: 'a' });
    q.publish(3, { id: 'b' });
    expect(q.stats(10)).toMatchObject({ ready: 2, oldestReadyAge: 8 });
    q.reserve(10);
    expect(q.stats(11)).toMatchObject({ ready: 1, active: 1, oldestReadyAge: 8 });
    q.reserve(11);
    expect(q.stats(12).oldestReadyAge).toBe(0);
  });

  it('R17 processingTime sums delivery-to-ack times and keeps the maximum', () => {
    const q = queueWith(['a', 'b', 'c']);
    q.reserve(1, { max: 3 });
    q.ack(4, 2);
    q.ack(10, 1);
    q.ack(12, 3);
    expect(q.stats(12).processingTime).toEqual({ count: 3, sum: 3 + 9 + 11, max: 11 });
  });

  it('R17 ackUpTo and session releases are counted per delivery', () => {
    const q = queueWith(['a', 'b', 'c', 'd']);
    const s = q.openSession(0);
    q.reserve(0, { max: 4, session: s });
    expect(q.ackUpTo(2, s, 2)).toBe(2);
    expect(q.closeSession(3, s)).toBe(2);
    expect(q.stats(3)).toMatchObject({
      acks: 2,
      sessionReleases: 2,
      ready: 2,
      processingTime: { count: 2, sum: 4, max: 2 },
    });
    q.reserve(3, { max: 2 });
    expect(q.stats(3)).toMatchObject({ deliveries: 6, redeliveries: 2 });
  });

  it('R17 stats is an operation: it validates now and runs R3', () => {
    const q = queueWith(['a'], { visibility: 5 });
    q.reserve(0);
    expect(q.stats(5)).toMatchObject({ queueTime: 5, ready: 1, active: 0, expiries: 1 });
    expect(q.queueTime).toBe(5);
    expectError(() => q.stats(4), ClockError, 'INVALID_CLOCK');
    expect(q.queueTime).toBe(5);
  });
});
