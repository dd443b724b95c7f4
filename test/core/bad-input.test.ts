import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/errors.js';
import { LeaseQueue } from '../../src/core/index.js';
import type { QueueOptions } from '../../src/core/types.js';
import { busyQueue, expectError, view } from './helpers.js';

const INVALID = 'INVALID_ARGUMENT';

/**
 * Expects a ValidationError from a call made at a later `now` (100) and proves nothing changed,
 * not even R3: the clock stays 5, the due delivery (deadline 6) is still active, counters same.
 */
function expectRejected(call: (q: LeaseQueue, s: string) => unknown): void {
  const { q, s } = busyQueue();
  const before = q.inspect();
  const stats = q.stats(5);
  const letters = q.deadLetters();
  const err = expectError(() => call(q, s), ValidationError, INVALID);
  expect(err.issues.length).toBeGreaterThan(0);
  expect(q.queueTime).toBe(5);
  expect(q.inspect()).toEqual(before);
  expect(q.deadLetters()).toEqual(letters);
  expect(q.stats(5)).toEqual(stats);
}

const LATER = 100;

describe('bad arguments are ValidationErrors thrown before any change', () => {
  const badOptions: [string, QueueOptions][] = [
    ['visibility 0', { visibility: 0 }],
    ['visibility -5', { visibility: -5 }],
    ['visibility 1.5', { visibility: 1.5 }],
    ['visibility NaN', { visibility: Number.NaN }],
    ['visibility "5"', { visibility: '5' as unknown as number }],
    ['prefetch 0', { prefetch: 0 }],
    ['prefetch 1.5', { prefetch: 1.5 }],
    ['prefetch -1', { prefetch: -1 }],
    ['maxDeliveries -1', { maxDeliveries: -1 }],
    ['maxDeliveries 1.5', { maxDeliveries: 1.5 }],
    ['maxLease 0', { maxLease: 0 }],
    ['maxLease 2.5', { maxLease: 2.5 }],
    ['dedupWindow -1', { dedupWindow: -1 }],
    ['dedupWindow 0.5', { dedupWindow: 0.5 }],
    ['retention 0 (R30)', { retention: 0 }],
    ['retention -1 (R30)', { retention: -1 }],
    ['retention 2.5 (R30)', { retention: 2.5 }],
    ['maxLength 0 (R31)', { maxLength: 0 }],
    ['maxLength 1.5 (R31)', { maxLength: 1.5 }],
    ['overflow "drop-head" (R31)', { overflow: 'drop-head' as 'reject' }],
  ];
  it.each(badOptions)('constructor with %s', (_label, options) => {
    expectError(() => new LeaseQueue(options), ValidationError, INVALID);
  });

  it('constructor accepts the documented extremes', () => {
    const q = new LeaseQueue({
      visibility: 1,
      prefetch: Number.POSITIVE_INFINITY,
      maxDeliveries: Number.POSITIVE_INFINITY,
      maxLease: Number.POSITIVE_INFINITY,
      dedupWindow: 0,
    });
    expect(q.inspect()).toEqual(view(0));
  });

  const badPublish: [string, object][] = [
    ['empty id', { id: '' }],
    ['id of 257 characters', { id: 'x'.repeat(257) }],
    ['numeric id', { id: 42 }],
    ['object id', { id: { a: 1 } }],
    ['delay -1', { id: 'n', delay: -1 }],
    ['delay 1.5', { id: 'n', delay: 1.5 }],
    ['delay NaN', { id: 'n', delay: Number.NaN }],
    ['expiresAt -1 (R30)', { id: 'n', expiresAt: -1 }],
    ['expiresAt 2.5 (R30)', { id: 'n', expiresAt: 2.5 }],
    ['expiresAt "9" (R30)', { id: 'n', expiresAt: '9' }],
  ];
  it.each(badPublish)('publish with %s', (_label, input) => {
    expectRejected((q) => q.publish(LATER, input as never));
  });

  it.each(badPublish)('publishBatch with one bad entry (%s) publishes nothing', (_label, input) => {
    expectRejected((q) => q.publishBatch(LATER, [{ id: 'ok1' }, input as never, { id: 'ok2' }]));
  });

  it('an id of exactly 256 characters is accepted', () => {
    const q = new LeaseQueue();
    const id = 'y'.repeat(256);
    expect(q.publish(0, { id })).toEqual({ id, duplicate: false });
  });

  const badReserve: [string, object][] = [
    ['max 0', { max: 0 }],
    ['max -1', { max: -1 }],
    ['max 1.5', { max: 1.5 }],
    ['max NaN', { max: Number.NaN }],
    ['visibility 0', { visibility: 0 }],
    ['visibility -2', { visibility: -2 }],
    ['visibility 2.5', { visibility: 2.5 }],
    ['visibility Infinity', { visibility: Number.POSITIVE_INFINITY }],
    ['a never-opened session', { session: 'never-opened' }],
  ];
  it.each(badReserve)('reserve with %s', (_label, options) => {
    expectRejected((q) => q.reserve(LATER, options));
  });

  it.each([
    ['0', 0],
    ['-3', -3],
    ['1.5', 1.5],
    ['NaN', Number.NaN],
  ])('extend of a live token with visibility %s', (_label, visibility) => {
    expectRejected((q) => q.extend(LATER, 2, visibility));
  });

  it.each([
    ['-1', -1],
    ['0.5', 0.5],
    ['NaN', Number.NaN],
  ])('nack, reject and nackUpTo with delay %s', (_label, delay) => {
    expectRejected((q) => q.nack(LATER, 2, { delay }));
    expectRejected((q) => q.reject(LATER, 2, { delay }));
    expectRejected((q, s) => q.nackUpTo(LATER, s, 10, { delay }));
  });

  it('operations naming a session that was never opened', () => {
    expectRejected((q) => q.heartbeat(LATER, 'ghost'));
    expectRejected((q) => q.closeSession(LATER, 'ghost'));
    expectRejected((q) => q.ackUpTo(LATER, 'ghost', 10));
    expectRejected((q) => q.nackUpTo(LATER, 'ghost', 10, {}));
  });

  it.each([
    ['prefetch 0', { prefetch: 0 }],
    ['prefetch 1.5', { prefetch: 1.5 }],
    ['timeout -1', { timeout: -1 }],
    ['timeout 1.5', { timeout: 1.5 }],
    ['ackTimeout -1', { ackTimeout: -1 }],
    ['ackTimeout 2.5', { ackTimeout: 2.5 }],
  ])('openSession with %s', (_label, options) => {
    expectRejected((q) => q.openSession(LATER, options));
  });

  it('the later valid call still works after a rejected one (nothing was half-done)', () => {
    const { q } = busyQueue();
    expectError(() => q.reserve(LATER, { max: 0 }), ValidationError, INVALID);
    expect(q.reserve(LATER, { max: 5 }).map((d) => [d.token, d.id])).toEqual([
      [4, 'a'],
      [5, 'b'],
      [6, 'e'],
      [7, 'd'],
    ]);
  });
});
