import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { expectRefusedUnchanged } from './assertions.js';
import { busyQueue } from './busy-queue.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/** Bad arguments at now = 9, ahead of the busy queue's clock 7: time must not advance either. */
type Call = (q: QueueHandle, session: string) => Promise<unknown>;
const NOW = 9;
// biome-ignore lint/suspicious/noExplicitAny: bad input on purpose, past the types
const bad = (value: unknown): any => value;
/** `[first, , last]`: a hole reads as undefined, though every, some, forEach and map skip it. */
// biome-ignore lint/suspicious/noExplicitAny: bad input on purpose, past the types
const holed = (first: unknown, last: unknown): any => {
  const list = [first];
  list[2] = last;
  return list;
};

const CASES: [string, Call][] = [
  ['publish: a job that is a string', (q) => q.publish(NOW, bad('job'))],
  ['publish: a job that is null', (q) => q.publish(NOW, bad(null))],
  ['publish: a job that is an array', (q) => q.publish(NOW, bad([]))],
  ['publish: an empty id', (q) => q.publish(NOW, { id: '' })],
  ['publish: an id of 257 characters', (q) => q.publish(NOW, { id: 'x'.repeat(257) })],
  ['publish: a numeric id', (q) => q.publish(NOW, { id: bad(5) })],
  ['publish: a null id', (q) => q.publish(NOW, { id: bad(null) })],
  ['publish: a negative delay', (q) => q.publish(NOW, { id: 'x', delay: -1 })],
  ['publish: a fractional delay', (q) => q.publish(NOW, { id: 'x', delay: 1.5 })],
  ['publish: a string delay', (q) => q.publish(NOW, { id: 'x', delay: bad('2') })],
  ['publish: a NaN delay', (q) => q.publish(NOW, { id: 'x', delay: Number.NaN })],
  ['publish: an infinite delay', (q) => q.publish(NOW, { id: 'x', delay: Infinity })],
  ['publish: expiresAt 1.5 (R30)', (q) => q.publish(NOW, { id: 'x', expiresAt: 1.5 })],
  ['publish: expiresAt -1 (R30)', (q) => q.publish(NOW, { id: 'x', expiresAt: -1 })],
  ['publish: expiresAt "20" (R30)', (q) => q.publish(NOW, { id: 'x', expiresAt: bad('20') })],
  ['publish: expiresAt Infinity (R30)', (q) => q.publish(NOW, { id: 'x', expiresAt: Infinity })],
  ['publishBatch: not an array', (q) => q.publishBatch(NOW, bad({ id: 'x' }))],
  ['publishBatch: null', (q) => q.publishBatch(NOW, bad(null))],
  ['publishBatch: one bad entry', (q) => q.publishBatch(NOW, [{ id: 'x' }, { id: '' }])],
  [
    'publishBatch: one entry with a fractional expiresAt (R30)',
    (q) => q.publishBatch(NOW, [{ id: 'x' }, { id: 'y', expiresAt: 2.5 }]),
  ],
  ['reserve: options that are a string', (q) => q.reserve(NOW, bad('x'))],
  ['reserve: options that are null', (q) => q.reserve(NOW, bad(null))],
  ['reserve: max 0', (q) => q.reserve(NOW, { max: 0 })],
  ['reserve: max -1', (q) => q.reserve(NOW, { max: -1 })],
  ['reserve: max 1.5', (q) => q.reserve(NOW, { max: 1.5 })],
  ['reserve: max "2"', (q) => q.reserve(NOW, { max: bad('2') })],
  ['reserve: visibility 0', (q) => q.reserve(NOW, { visibility: 0 })],
  ['reserve: visibility 2.5', (q) => q.reserve(NOW, { visibility: 2.5 })],
  ['reserve: visibility Infinity', (q) => q.reserve(NOW, { visibility: Infinity })],
  ['reserve: a session never opened', (q) => q.reserve(NOW, { session: 'nope' })],
  ['reserve: a session id never issued', (q) => q.reserve(NOW, { session: 's999' })],
  ['reserve: a numeric session', (q) => q.reserve(NOW, { session: bad(1) })],
  ['ack: token 0', (q) => q.ack(NOW, 0)],
  ['ack: token -1', (q) => q.ack(NOW, -1)],
  ['ack: token 1.5', (q) => q.ack(NOW, 1.5)],
  ['ack: token "1"', (q) => q.ack(NOW, bad('1'))],
  ['ack: token NaN', (q) => q.ack(NOW, Number.NaN)],
  ['ack: token null', (q) => q.ack(NOW, bad(null))],
  ['ackMany: not an array', (q) => q.ackMany(NOW, bad(1))],
  ['ackMany: a live token and a bad one', (q) => q.ackMany(NOW, [1, 0])],
  ['nack: token 0', (q) => q.nack(NOW, 0)],
  ['nack: options that are a string', (q) => q.nack(NOW, 2, bad('requeue'))],
  ['nack: requeue "no"', (q) => q.nack(NOW, 2, { requeue: bad('no') })],
  ['nack: delay -1', (q) => q.nack(NOW, 2, { delay: -1 })],
  ['nack: delay 0.5', (q) => q.nack(NOW, 2, { delay: 0.5 })],
  ['nack: an empty reason', (q) => q.nack(NOW, 2, { requeue: false, reason: '' })],
  [
    'nack: a reason of 1025 characters',
    (q) => q.nack(NOW, 2, { requeue: false, reason: 'r'.repeat(1025) }),
  ],
  ['nack: a numeric reason', (q) => q.nack(NOW, 2, { requeue: false, reason: bad(5) })],
  // null is no option's "left out" here: a bug's requeue: null must not quietly requeue.
  ['nack: requeue null', (q) => q.nack(NOW, 2, { requeue: bad(null) })],
  ['nack: delay null', (q) => q.nack(NOW, 2, { delay: bad(null) })],
  ['nack: reason null', (q) => q.nack(NOW, 2, { requeue: false, reason: bad(null) })],
  ['nack: attempted null', (q) => q.nack(NOW, 2, { attempted: bad(null) })],
  ['reserve: max null', (q) => q.reserve(NOW, { max: bad(null) })],
  ['reserve: ack null', (q) => q.reserve(NOW, { ack: bad(null) })],
  ['reject: token 1.5', (q) => q.reject(NOW, 1.5)],
  ['reject: delay -2', (q) => q.reject(NOW, 2, { delay: -2 })],
  ['extend: token 0', (q) => q.extend(NOW, 0, 5)],
  ['extend: visibility 0', (q) => q.extend(NOW, 2, 0)],
  ['extend: visibility -5', (q) => q.extend(NOW, 2, -5)],
  ['extend: visibility 1.5', (q) => q.extend(NOW, 2, 1.5)],
  ['extend: visibility Infinity', (q) => q.extend(NOW, 2, Infinity)],
  ['openSession: options that are a string', (q) => q.openSession(NOW, bad('x'))],
  ['openSession: prefetch 0', (q) => q.openSession(NOW, { prefetch: 0 })],
  ['openSession: prefetch 1.5', (q) => q.openSession(NOW, { prefetch: 1.5 })],
  ['openSession: timeout 0', (q) => q.openSession(NOW, { timeout: 0 })],
  ['openSession: timeout -1', (q) => q.openSession(NOW, { timeout: -1 })],
  ['openSession: ackTimeout 0', (q) => q.openSession(NOW, { ackTimeout: 0 })],
  ['openSession: ackTimeout 2.5', (q) => q.openSession(NOW, { ackTimeout: 2.5 })],
  ['heartbeat: a session never opened', (q) => q.heartbeat(NOW, 'nope')],
  ['heartbeat: a session id never issued', (q) => q.heartbeat(NOW, 's999')],
  ['heartbeat: a numeric session', (q) => q.heartbeat(NOW, bad(1))],
  ['closeSession: a session never opened', (q) => q.closeSession(NOW, 'nope')],
  ['ackUpTo: a session never opened', (q) => q.ackUpTo(NOW, 'nope', 1)],
  ['ackUpTo: token 0', (q, s) => q.ackUpTo(NOW, s, 0)],
  ['nackUpTo: a session never opened', (q) => q.nackUpTo(NOW, 'nope', 1)],
  ['nackUpTo: token 1.5', (q, s) => q.nackUpTo(NOW, s, 1.5)],
  ['nackUpTo: delay -1', (q, s) => q.nackUpTo(NOW, s, 1, { delay: -1 })],
  ['redrive: ids that are a string', (q) => q.redrive(NOW, bad('c'))],
  ['redrive: an empty id', (q) => q.redrive(NOW, ['c', ''])],
  ['redrive: a numeric id', (q) => q.redrive(NOW, bad(['c', 5]))],
  ['purge: ids that are a string', (q) => q.purge(NOW, bad('c'))],
  ['purge: an id of 257 characters', (q) => q.purge(NOW, ['c', 'x'.repeat(257)])],
  ['purgeQueue: dead null', (q) => q.purgeQueue(NOW, { dead: bad(null) })],
  ['publishBatch: a hole between two jobs', (q) => q.publishBatch(NOW, holed({ id: 'x' }, {}))],
  ['ackMany: a hole between two live tokens', (q) => q.ackMany(NOW, holed(1, 2))],
  ['redrive: a hole between two ids', (q) => q.redrive(NOW, holed('c', 'd'))],
  ['purge: a hole between two ids', (q) => q.purge(NOW, holed('c', 'd'))],
  ['moveJobs: a hole between two ids', (q) => q.moveJobs(NOW, { ids: holed('c', 'd') })],
];

describeEngines(engines, (h) => {
  describe('bad input: a typed ValidationError, and nothing changes', () => {
    it.each(CASES)('R2 R5 %s', async (_name, call) => {
      const { queue, session } = await busyQueue(h);
      const error = await expectRefusedUnchanged(
        queue,
        () => call(queue, session),
        ValidationError,
        'INVALID_ARGUMENT',
      );
      expect(error.issues.length).toBeGreaterThan(0);
      expect(await queue.queueTime()).toBe(7);
    });

    it('R5 every problem of one call is reported at once', async () => {
      const { queue } = await busyQueue(h);
      const reserve = await expectRefusedUnchanged(
        queue,
        () => queue.reserve(NOW, { max: 0, visibility: 0 }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
      expect(reserve.issues).toHaveLength(2);
      const batch = await expectRefusedUnchanged(
        queue,
        () => queue.publishBatch(NOW, [{ id: '' }, { id: 'ok' }, { delay: -1 }]),
        ValidationError,
        'INVALID_ARGUMENT',
      );
      expect(batch.issues).toHaveLength(2);
      const session = await expectRefusedUnchanged(
        queue,
        () => queue.openSession(NOW, { prefetch: 0, timeout: 0, ackTimeout: 0 }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
      expect(session.issues).toHaveLength(3);
    });
  });
});
