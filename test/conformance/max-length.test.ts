import { describe, expect, it } from 'vitest';
import {
  build,
  ConflictError,
  QueueFullError,
  type QueueOptions,
  ValidationError,
} from '../../src/core/index.js';
import { expectRejection, snapshot, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

const DEFAULTS = {
  visibility: 30_000,
  prefetch: Number.POSITIVE_INFINITY,
  maxDeliveries: 10,
  maxLease: Number.POSITIVE_INFINITY,
  dedupWindow: 0,
};

const OLDEST = { overflow: 'dead-letter-oldest' } as const;

// biome-ignore lint/suspicious/noExplicitAny: bad input on purpose, past the types
const bad = (value: unknown): any => value;

/**
 * Expects the publish to fail with QUEUE_FULL and the queue to be as before, but for its
 * `refused` counter, which counts the publish's `jobs` (R17).
 */
async function expectRefusedCounted(
  queue: Parameters<typeof snapshot>[0],
  publish: () => Promise<unknown>,
  jobs: number,
): Promise<QueueFullError> {
  const before = await snapshot(queue);
  const error = await expectRejection(publish, QueueFullError, 'QUEUE_FULL');
  expect(await snapshot(queue)).toEqual({
    ...before,
    stats: { ...before.stats, refused: before.stats.refused + jobs },
  });
  return error;
}

describeEngines(engines, (h) => {
  describe('R31 maxLength, overflow reject', () => {
    it('R31 a publish that would leave more ready jobs than maxLength is a QueueFullError (QUEUE_FULL) and stores nothing', async () => {
      const q = await h.queue({ maxLength: 2 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      // Refused after R3, like any refused operation: at the queue's own time nothing moves.
      const error = await expectRefusedCounted(q, () => q.publish(0, { id: 'c' }), 1);
      expect(error.message).toContain('maxLength 2');
      expect(await q.job('c')).toBeUndefined();
      expect(await q.stats(1)).toMatchObject({ ready: 2, published: 2, refused: 1 });
      // Once a consumer took a job there is room again.
      await q.reserve(2);
      expect(await q.publish(2, { id: 'c' })).toEqual({ id: 'c', duplicate: false });
    });

    it('R31 R5 a batch is all or nothing: one job too many refuses the whole batch', async () => {
      const q = await h.queue({ maxLength: 3 });
      await q.publish(0, { id: 'a' });
      await expectRefusedCounted(
        q,
        () => q.publishBatch(0, [{ id: 'b' }, { id: 'c' }, { id: 'd' }]),
        3,
      );
      expect(await q.publishBatch(1, [{ id: 'b' }, { id: 'c' }])).toEqual([
        { id: 'b', duplicate: false },
        { id: 'c', duplicate: false },
      ]);
      expect(await q.inspect()).toEqual(view(1, { ready: ['a', 'b', 'c'] }));
    });

    it('R31 only ready jobs count: active, delayed, waiting and dead ones do not, nor duplicates (R4)', async () => {
      const q = await h.queue({ maxLength: 1, visibility: 100 });
      await q.publish(0, { id: 'a' });
      const [a] = await q.reserve(0);
      await q.publish(0, { id: 'b' });
      expect(await q.publish(0, { id: 'b' })).toEqual({ id: 'b', duplicate: true });
      expect(await q.publish(0, { id: 'a' })).toEqual({ id: 'a', duplicate: true });
      await q.publish(0, { id: 'later', delay: 5 });
      await q.publish(0, { id: 'g1', group: 'g', delay: 10 });
      await q.publish(0, { id: 'g2', group: 'g' });
      await q.nack(0, a?.token as number, { requeue: false });
      expect(await q.stats(0)).toMatchObject({
        ready: 1,
        active: 0,
        delayed: 2,
        waiting: 1,
        dead: 1,
      });
      await expectRejection(() => q.publish(0, { id: 'c' }), QueueFullError, 'QUEUE_FULL');
      // A batch whose ready job is a duplicate and whose others wait or are delayed adds none.
      expect(
        await q.publishBatch(0, [{ id: 'b' }, { id: 'g3', group: 'g' }, { id: 'd', delay: 1 }]),
      ).toEqual([
        { id: 'b', duplicate: true },
        { id: 'g3', duplicate: false, groupSeq: 6 },
        { id: 'd', duplicate: false },
      ]);
    });

    it('R31 time may take ready past maxLength (nothing already taken is refused or dropped); the next publish is refused', async () => {
      const q = await h.queue({ maxLength: 1 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b', delay: 5 }]);
      expect(await q.stats(5)).toMatchObject({ ready: 2, dead: 0 });
      await expectRejection(() => q.publish(5, { id: 'c' }), QueueFullError, 'QUEUE_FULL');
      expect(await q.publish(5, { id: 'd', delay: 1 })).toEqual({ id: 'd', duplicate: false });
    });

    it('R31 R20 in a batch of operations the refused publish is its own outcome; the others go on', async () => {
      const q = await h.queue({ maxLength: 1 });
      await q.publish(0, { id: 'a' });
      const outcomes = await q.execute(1, [
        build.publish({ id: 'b' }),
        build.reserve(),
        build.publish({ id: 'b' }),
      ]);
      expect(outcomes[0]).toMatchObject({ ok: false, error: { code: 'QUEUE_FULL' } });
      expect((outcomes[0] as { error: unknown }).error).toBeInstanceOf(QueueFullError);
      expect(outcomes[1]).toMatchObject({ ok: true, value: [{ id: 'a', token: 1 }] });
      expect(outcomes[2]).toEqual({ ok: true, value: [{ id: 'b', duplicate: false }] });
    });

    it('R31 updateQueue: a lower maxLength drops nothing, it refuses the next publish; null removes it', async () => {
      const name = h.queueName('update');
      const q = await h.engine().queue(name);
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      expect(await h.engine().updateQueue(name, { maxLength: 1 })).toEqual({
        ...DEFAULTS,
        maxLength: 1,
      });
      expect(await q.stats(1)).toMatchObject({ ready: 3, dead: 0 });
      await expectRejection(() => q.publish(1, { id: 'd' }), QueueFullError, 'QUEUE_FULL');
      expect(await h.engine().updateQueue(name, { maxLength: null })).toEqual(DEFAULTS);
      expect(await q.publish(1, { id: 'd' })).toEqual({ id: 'd', duplicate: false });
    });

    it('R31 the options: shown when set (overflow only when not reject); another value is a CONFLICT', async () => {
      const name = h.queueName('options');
      const q = await h.engine().queue(name, { maxLength: 10, overflow: 'reject' });
      expect(await q.options()).toEqual({ ...DEFAULTS, maxLength: 10 });
      await h.engine().queue(name, { maxLength: 10, overflow: 'reject' });
      await expectRejection(
        () => h.engine().queue(name, { overflow: 'dead-letter-oldest' }),
        ConflictError,
        'CONFLICT',
      );
      await expectRejection(
        () => h.engine().queue(name, { maxLength: 5 }),
        ConflictError,
        'CONFLICT',
      );
      const other = h.queueName('oldest');
      const dropping = await h.engine().queue(other, { maxLength: 3, ...OLDEST });
      expect(await dropping.options()).toEqual({ ...DEFAULTS, maxLength: 3, ...OLDEST });
      expect(await h.engine().updateQueue(other, { overflow: 'reject' })).toEqual({
        ...DEFAULTS,
        maxLength: 3,
      });
    });
  });

  describe('R31 bad options', () => {
    const cases: [QueueOptions, string][] = [
      [{ maxLength: 0 }, 'maxLength'],
      [{ maxLength: -3 }, 'maxLength'],
      [{ maxLength: 1.5 }, 'maxLength'],
      [{ maxLength: bad('10') }, 'maxLength'],
      [{ maxLength: 5, overflow: bad('drop-head') }, 'overflow'],
      [{ overflow: bad(true) }, 'overflow'],
    ];
    it('R31 bad input is a ValidationError naming the field, and changes nothing', async () => {
      const name = h.queueName('kept');
      const q = await h.engine().queue(name, { maxLength: 2 });
      for (const [options, field] of cases) {
        const fresh = h.queueName('bad');
        const created = await expectRejection(
          () => h.engine().queue(fresh, options),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        expect(created.message).toContain(field);
        expect((await h.engine().listQueues()).map((info) => info.name)).not.toContain(fresh);
        const updated = await expectRejection(
          () => h.engine().updateQueue(name, options),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        expect(updated.message).toContain(field);
      }
      expect(await q.options()).toEqual({ ...DEFAULTS, maxLength: 2 });
    });
  });

  describe('R31 maxLength, overflow dead-letter-oldest', () => {
    it('R31 the publish is taken; the oldest ready job dies with reason maxlen, counted', async () => {
      const q = await h.queue({ maxLength: 2, visibility: 10, ...OLDEST });
      await q.publishBatch(0, [{ id: 'a', payload: 1 }, { id: 'b' }]);
      expect(await q.publish(1, { id: 'c' })).toEqual({ id: 'c', duplicate: false });
      expect(await q.inspect()).toEqual(
        view(1, { ready: ['b', 'c'], dead: [{ id: 'a', reason: 'maxlen', deliveryCount: 0 }] }),
      );
      expect(await q.deadLetters()).toEqual([
        { id: 'a', payload: 1, reason: 'maxlen', deliveryCount: 0, deadAt: 1, history: [] },
      ]);
      // A requeued job stands at the front of ready: it is the oldest now.
      const [b] = await q.reserve(2);
      await q.nack(3, b?.token as number);
      await q.publish(4, { id: 'd' });
      expect(await q.inspect()).toEqual(
        view(4, {
          ready: ['c', 'd'],
          dead: [
            { id: 'a', reason: 'maxlen', deliveryCount: 0 },
            { id: 'b', reason: 'maxlen', deliveryCount: 1 },
          ],
        }),
      );
      expect(await q.stats(4)).toMatchObject({ published: 4, deadLetters: { maxlen: 2 } });
    });

    it('R31 a batch larger than maxLength keeps its last jobs; each answered as published', async () => {
      const q = await h.queue({ maxLength: 2, ...OLDEST });
      await q.publish(0, { id: 'x' });
      expect(await q.publishBatch(1, [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'a' }])).toEqual(
        [
          { id: 'a', duplicate: false },
          { id: 'b', duplicate: false },
          { id: 'c', duplicate: false },
          { id: 'a', duplicate: true },
        ],
      );
      expect(await q.inspect()).toEqual(
        view(1, {
          ready: ['b', 'c'],
          dead: [
            { id: 'x', reason: 'maxlen', deliveryCount: 0 },
            { id: 'a', reason: 'maxlen', deliveryCount: 0 },
          ],
        }),
      );
    });

    it('R31 R23 the oldest is the front of the lowest priority that has a ready job, even the job just published', async () => {
      const q = await h.queue({ maxLength: 2, ...OLDEST });
      await q.publishBatch(0, [
        { id: 'h1', priority: 5 },
        { id: 'l1', priority: 0 },
      ]);
      await q.publish(1, { id: 'h2', priority: 5 });
      await q.publish(2, { id: 'l2' });
      await q.publish(3, { id: 'top', priority: 9 });
      expect(await q.inspect()).toEqual(
        view(3, {
          ready: ['top', 'h2'],
          dead: [
            { id: 'l1', reason: 'maxlen', deliveryCount: 0 },
            { id: 'l2', reason: 'maxlen', deliveryCount: 0 },
            { id: 'h1', reason: 'maxlen', deliveryCount: 0 },
          ],
        }),
      );
      expect((await q.reserve(4, { max: 2 })).map((d) => [d.token, d.id])).toEqual([
        [1, 'top'],
        [2, 'h2'],
      ]);
    });

    it('R31 R26 with a deadLetterQueue the oldest moves there, origin reason maxlen', async () => {
      const dlqName = h.queueName('dlq');
      const dlq = await h.engine().queue(dlqName);
      const sourceName = h.queueName('src');
      const source = await h
        .engine()
        .queue(sourceName, { maxLength: 1, deadLetterQueue: dlqName, ...OLDEST });
      await source.publish(0, { id: 'a', payload: 'old' });
      await source.publish(3, { id: 'b' });
      expect(await source.inspect()).toEqual(view(3, { ready: ['b'] }));
      expect(await source.stats(3)).toMatchObject({ dead: 0, deadLetters: { maxlen: 1 } });
      expect(await dlq.job('a')).toEqual({
        id: 'a',
        payload: 'old',
        state: 'ready',
        deliveryCount: 0,
        publishedAt: 0,
        history: [],
        origin: { queue: sourceName, reason: 'maxlen', at: 3 },
      });
    });

    it('R31 R24 a first member that dies for room lets its group go on, and ready is counted again', async () => {
      const q = await h.queue({ maxLength: 1, ...OLDEST });
      await q.publishBatch(0, [
        { id: 'g1', group: 'g' },
        { id: 'g2', group: 'g' },
      ]);
      await q.publish(1, { id: 'x' });
      // g1 dies; g2 goes to the back of ready, behind x, which is then the oldest.
      expect(await q.inspect()).toEqual(
        view(1, {
          ready: ['g2'],
          dead: [
            { id: 'g1', reason: 'maxlen', deliveryCount: 0 },
            { id: 'x', reason: 'maxlen', deliveryCount: 0 },
          ],
        }),
      );
    });

    it('R31 a publish that adds nothing to ready drops nothing, even above maxLength', async () => {
      const q = await h.queue({ maxLength: 1, ...OLDEST });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b', delay: 2 }]);
      expect(await q.stats(2)).toMatchObject({ ready: 2 });
      await q.publishBatch(2, [{ id: 'a' }, { id: 'c', delay: 1 }]);
      expect(await q.stats(2)).toMatchObject({ ready: 2, dead: 0 });
      await q.publish(2, { id: 'd' });
      expect(await q.inspect()).toEqual(
        view(2, {
          ready: ['d'],
          delayed: [{ id: 'c', availableAt: 3 }],
          dead: [
            { id: 'a', reason: 'maxlen', deliveryCount: 0 },
            { id: 'b', reason: 'maxlen', deliveryCount: 0 },
          ],
        }),
      );
    });
  });
});
