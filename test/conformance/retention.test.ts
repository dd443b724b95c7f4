import { describe, expect, it } from 'vitest';
import { ConflictError, ValidationError } from '../../src/core/index.js';
import { expectRefusedUnchanged, expectRejection, view } from './assertions.js';
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

describeEngines(engines, (h) => {
  describe('R30 retention and expiresAt', () => {
    it('R30 R3 a ready job dies with reason expired once publishedAt + retention comes, at the next operation; counted', async () => {
      const q = await h.queue({ visibility: 10, retention: 5 });
      await q.publish(0, { id: 'a', payload: 1 });
      await q.publish(2, { id: 'b' });
      expect(await q.stats(4)).toMatchObject({ ready: 2, dead: 0, expired: 0 });
      // Inspection takes no time: nothing expires until an operation observes the queue.
      expect(await q.inspect()).toEqual(view(4, { ready: ['a', 'b'] }));
      const at5 = await q.stats(5);
      expect(at5).toMatchObject({ ready: 1, dead: 1, expired: 1, deadLetters: { expired: 1 } });
      expect(at5.expiries).toBe(0); // lease expiries are another counter
      expect(await q.inspect()).toEqual(
        view(5, { ready: ['b'], dead: [{ id: 'a', reason: 'expired', deliveryCount: 0 }] }),
      );
      expect(await q.job('a')).toMatchObject({
        state: 'dead',
        reason: 'expired',
        deadAt: 5,
        publishedAt: 0,
        history: [],
      });
      expect(await q.deadLetters()).toEqual([
        { id: 'a', payload: 1, reason: 'expired', deliveryCount: 0, deadAt: 5, history: [] },
      ]);
    });

    it('R30 a reserve never hands out an expired job: it expires them first and takes the next', async () => {
      const q = await h.queue({ visibility: 10, retention: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await q.publish(3, { id: 'c' });
      expect(await q.reserve(7, { max: 3 })).toEqual([
        {
          token: 1,
          id: 'c',
          payload: undefined,
          deadline: 17,
          deliveryCount: 1,
          redelivered: false,
        },
      ]);
      expect(await q.reserve(7, { ack: 'auto' })).toEqual([]);
      expect((await q.inspect()).dead.map((job) => job.id)).toEqual(['a', 'b']);
    });

    it('R30 retention never ends an active delivery; back in ready past it (nack, lease expiry) the job dies at the next operation', async () => {
      const q = await h.queue({ visibility: 100, retention: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      const [a] = await q.reserve(1);
      const [b] = await q.reserve(1, { visibility: 8 });
      expect(b).toMatchObject({ id: 'b', token: 2, deadline: 9 });
      expect(await q.stats(6)).toMatchObject({ active: 2, expired: 0 });
      expect(await q.extend(6, a?.token as number, 100)).toBe(106);
      expect(await q.nack(7, a?.token as number)).toBe(true);
      expect(await q.inspect()).toEqual(
        view(7, {
          ready: ['a'],
          active: [{ token: 2, id: 'b', deadline: 9, deliveryCount: 1 }],
        }),
      );
      expect(await q.stats(7)).toMatchObject({ ready: 0, expired: 1 });
      // b's lease runs out at 9 (R3b); it is back in ready past its retention and dies (R3d).
      expect(await q.reserve(9)).toEqual([]);
      expect(await q.inspect()).toEqual(
        view(9, {
          dead: [
            { id: 'a', reason: 'expired', deliveryCount: 1 },
            { id: 'b', reason: 'expired', deliveryCount: 1 },
          ],
        }),
      );
      expect((await q.job('b'))?.history).toEqual([
        { token: 2, deliveredAt: 1, endedAt: 9, outcome: 'expired' },
      ]);
      expect(await q.stats(9)).toMatchObject({ expiries: 1, expired: 2 });
    });

    it('R30 delayed jobs expire too: retention counts from the publish, not from when a job is ready', async () => {
      const q = await h.queue({ retention: 5 });
      await q.publishBatch(0, [
        { id: 'late', delay: 10 },
        { id: 'soon', delay: 2 },
      ]);
      expect(await q.stats(4)).toMatchObject({ ready: 1, delayed: 1 });
      expect(await q.stats(5)).toMatchObject({ ready: 0, delayed: 0, dead: 2, expired: 2 });
      // In expiry order (both at 5), then publish order.
      expect((await q.inspect()).dead.map((job) => job.id)).toEqual(['late', 'soon']);
    });

    it('R30 expiresAt on publish: the job dies at that queue time; with a retention too, the earlier wins', async () => {
      const plain = await h.queue();
      await plain.publish(0, { id: 'x', expiresAt: 4 });
      await plain.publish(0, { id: 'y', expiresAt: 40 });
      expect(await plain.job('x')).toMatchObject({ state: 'ready', expiresAt: 4 });
      expect(await plain.stats(3)).toMatchObject({ ready: 2, expired: 0 });
      expect(await plain.stats(4)).toMatchObject({ ready: 1, expired: 1 });

      const q = await h.queue({ retention: 10 });
      await q.publishBatch(0, [
        { id: 'own', expiresAt: 3 },
        { id: 'kept', expiresAt: 50 },
      ]);
      await q.stats(3);
      expect(await q.inspect()).toEqual(
        view(3, { ready: ['kept'], dead: [{ id: 'own', reason: 'expired', deliveryCount: 0 }] }),
      );
      await q.stats(10);
      expect((await q.inspect()).dead.map((job) => job.id)).toEqual(['own', 'kept']);
    });

    it('R30 a job published with an expiresAt already past is taken and expires at the next operation', async () => {
      const q = await h.queue();
      await q.stats(10);
      expect(await q.publish(10, { id: 'old', expiresAt: 5 })).toEqual({
        id: 'old',
        duplicate: false,
      });
      expect(await q.reserve(10)).toEqual([]);
      expect(await q.job('old')).toMatchObject({ state: 'dead', reason: 'expired', deadAt: 10 });
      expect(await q.stats(10)).toMatchObject({ published: 1, expired: 1 });
    });

    it('R30 jobs that expire at one step die in expiry order, then publish order', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [
        { id: 'x', expiresAt: 6 },
        { id: 'y', expiresAt: 4 },
        { id: 'z', expiresAt: 4, delay: 20 },
        { id: 'w' },
      ]);
      await q.stats(9);
      expect(await q.inspect()).toEqual(
        view(9, {
          ready: ['w'],
          dead: [
            { id: 'y', reason: 'expired', deliveryCount: 0 },
            { id: 'z', reason: 'expired', deliveryCount: 0 },
            { id: 'x', reason: 'expired', deliveryCount: 0 },
          ],
        }),
      );
    });

    it('R30 ready jobs left keep their order when jobs in the middle expire', async () => {
      const q = await h.queue({ visibility: 50 });
      await q.publishBatch(0, [
        { id: 'a' },
        { id: 'b', expiresAt: 3 },
        { id: 'c' },
        { id: 'd', expiresAt: 3, priority: 4 },
        { id: 'e', priority: 4 },
        { id: 'f', expiresAt: 3 },
        { id: 'g' },
      ]);
      await q.stats(3);
      expect((await q.inspect()).ready).toEqual(['e', 'a', 'c', 'g']);
      expect((await q.reserve(4, { max: 4 })).map((d) => [d.token, d.id])).toEqual([
        [1, 'e'],
        [2, 'a'],
        [3, 'c'],
        [4, 'g'],
      ]);
      await q.publish(4, { id: 'h' });
      expect((await q.inspect()).ready).toEqual(['h']);
    });

    it('R30 R26 with a deadLetterQueue an expired job moves there: origin reason expired, its expiresAt left behind', async () => {
      const dlqName = h.queueName('dlq');
      const dlq = await h.engine().queue(dlqName);
      const sourceName = h.queueName('src');
      const source = await h.engine().queue(sourceName, { retention: 5, deadLetterQueue: dlqName });
      await source.publishBatch(0, [{ id: 'a', payload: 'p', expiresAt: 3 }, { id: 'b' }]);
      expect(await source.stats(5)).toMatchObject({
        ready: 0,
        dead: 0,
        expired: 2,
        deadLetters: { expired: 2 },
      });
      expect(await dlq.inspect()).toEqual(view(0, { ready: ['a', 'b'] }));
      const moved = await dlq.job('a');
      expect(moved).toEqual({
        id: 'a',
        payload: 'p',
        state: 'ready',
        deliveryCount: 0,
        publishedAt: 0,
        history: [],
        origin: { queue: sourceName, reason: 'expired', at: 5 },
      });
      expect(await dlq.stats(1000)).toMatchObject({ ready: 2, expired: 0 });
    });

    it('R30 R26 a dead-letter queue with a retention counts it from the original publish', async () => {
      const dlqName = h.queueName('dlq');
      const dlq = await h.engine().queue(dlqName, { retention: 20 });
      const source = await h.queue({ visibility: 100, deadLetterQueue: dlqName });
      await source.publish(0, { id: 'a' });
      const [a] = await source.reserve(0);
      await source.nack(12, a?.token as number, { requeue: false });
      expect(await dlq.stats(19)).toMatchObject({ ready: 1 });
      expect(await dlq.stats(20)).toMatchObject({ ready: 0, dead: 1, expired: 1 });
    });

    it('R30 R24 an expired first member leaves its group, which goes on; a waiting member does not expire while it waits', async () => {
      const q = await h.queue({ visibility: 10 });
      await q.publishBatch(0, [
        { id: 'a', group: 'g', expiresAt: 5 },
        { id: 'b', group: 'g' },
        { id: 'c', group: 'g', expiresAt: 3 },
      ]);
      expect(await q.stats(5)).toMatchObject({ ready: 1, waiting: 1, expired: 1 });
      expect(await q.inspect()).toEqual(
        view(5, {
          ready: ['b'],
          waiting: ['c'],
          dead: [{ id: 'a', reason: 'expired', deliveryCount: 0 }],
        }),
      );
      const [b] = await q.reserve(5);
      expect(b?.id).toBe('b');
      expect(await q.ack(6, b?.token as number)).toBe(true);
      // c is the group's first member now, ready past its expiresAt: the next operation ends it.
      expect(await q.inspect()).toEqual(
        view(6, { ready: ['c'], dead: [{ id: 'a', reason: 'expired', deliveryCount: 0 }] }),
      );
      expect(await q.reserve(6)).toEqual([]);
      expect((await q.inspect()).dead.map((job) => job.id)).toEqual(['a', 'c']);
    });

    it('R30 R24 the next member of a group, already past its expiry, dies in the same step in its place', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [
        { id: 'first', group: 'g', expiresAt: 5 },
        { id: 'next', group: 'g', expiresAt: 4 },
        { id: 'other', expiresAt: 5 },
        { id: 'third', group: 'g' },
      ]);
      await q.stats(5);
      expect(await q.inspect()).toEqual(
        view(5, {
          ready: ['third'],
          // first (5), then next (4: due, and next in expiry order once first made it ready),
          // then other (5, published after first).
          dead: [
            { id: 'first', reason: 'expired', deliveryCount: 0 },
            { id: 'next', reason: 'expired', deliveryCount: 0 },
            { id: 'other', reason: 'expired', deliveryCount: 0 },
          ],
        }),
      );
    });

    it('R30 updateQueue: a retention set applies to the jobs already there; removed (null), jobs live on', async () => {
      const name = h.queueName('update');
      const q = await h.engine().queue(name);
      await q.publish(0, { id: 'a' });
      await q.stats(8);
      expect(await h.engine().updateQueue(name, { retention: 5 })).toEqual({
        ...DEFAULTS,
        retention: 5,
      });
      expect(await q.stats(8)).toMatchObject({ ready: 0, expired: 1 });
      await q.publish(8, { id: 'b' });
      expect(await h.engine().updateQueue(name, { retention: null })).toEqual(DEFAULTS);
      expect(await q.stats(1000)).toMatchObject({ ready: 1, expired: 1 });
      expect(await q.options()).toEqual(DEFAULTS);
    });

    it('R30 R14 a redriven job keeps its publish time and expiresAt: past them, it expires again at the next operation', async () => {
      const q = await h.queue({ retention: 5 });
      await q.publish(0, { id: 'a' });
      await q.stats(5);
      expect(await q.redrive(6)).toBe(1);
      expect(await q.inspect()).toEqual(view(6, { ready: ['a'] }));
      expect(await q.stats(6)).toMatchObject({ ready: 0, dead: 1, expired: 2, redriven: 1 });
    });

    it('R30 the option: shown when set, none spelled by leaving it out, Infinity or null; another value is a CONFLICT', async () => {
      const name = h.queueName('options');
      const q = await h.engine().queue(name, { retention: 60_000 });
      expect(await q.options()).toEqual({ ...DEFAULTS, retention: 60_000 });
      await h.engine().queue(name, { retention: 60_000 });
      await expectRejection(
        () => h.engine().queue(name, { retention: 1000 }),
        ConflictError,
        'CONFLICT',
      );
      const plain = h.queueName('plain');
      await h.engine().queue(plain, { retention: Number.POSITIVE_INFINITY });
      expect(await (await h.engine().queue(plain, { retention: null })).options()).toEqual(
        DEFAULTS,
      );
    });

    it('R30 bad input is a ValidationError naming the field, and changes nothing', async () => {
      for (const retention of [0, -1, 1.5, Number.NaN]) {
        const name = h.queueName('bad');
        const error = await expectRejection(
          () => h.engine().queue(name, { retention }),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        expect(error.message).toContain('retention');
        expect((await h.engine().listQueues()).map((info) => info.name)).not.toContain(name);
      }
      const name = h.queueName('kept');
      const q = await h.engine().queue(name, { retention: 50 });
      await q.publish(0, { id: 'a' });
      const update = await expectRejection(
        () => h.engine().updateQueue(name, { retention: 0 }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
      expect(update.message).toContain('retention');
      expect(await q.options()).toEqual({ ...DEFAULTS, retention: 50 });
      for (const expiresAt of [1.5, -1, Number.POSITIVE_INFINITY]) {
        const refused = await expectRefusedUnchanged(
          q,
          () => q.publishBatch(0, [{ id: 'b' }, { id: 'c', expiresAt }]),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        expect(refused.message).toContain('jobs[1].expiresAt');
      }
    });

    it.skipIf(h.viaClient)('R30 nextEventAt is the first expiry due', async () => {
      const q = await h.queue({ retention: 50 });
      await q.publish(0, { id: 'a', expiresAt: 30 });
      await q.publish(10, { id: 'b' });
      expect(await q.nextEventAt()).toBe(30);
      await q.stats(30);
      expect(await q.nextEventAt()).toBe(60);
    });
  });
});
