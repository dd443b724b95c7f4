import { describe, expect, it } from 'vitest';
import { ConflictError, ValidationError } from '../../src/core/index.js';
import { expectRejection, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines, type EngineHarness } from './suite.js';

const engines = await useConformanceEngines();

/** A source queue whose dead jobs go to a fresh dead-letter queue. */
async function linked(h: EngineHarness, options: { maxDeliveries?: number } = {}) {
  const dlqName = h.queueName('dlq');
  const dlq = await h.engine().queue(dlqName);
  const sourceName = h.queueName('src');
  const source = await h
    .engine()
    .queue(sourceName, { visibility: 5, deadLetterQueue: dlqName, ...options });
  return { dlq, dlqName, source, sourceName };
}

describeEngines(engines, (h) => {
  describe('R26 dead-letter queue', () => {
    it('R26 a rejected job moves into the dead-letter queue as ready: same id, payload, history, its origin recorded', async () => {
      const { dlq, source, sourceName } = await linked(h);
      await source.publish(0, { id: 'a', payload: { n: 1 } });
      const [delivery] = await source.reserve(1);
      expect(
        await source.nack(2, delivery?.token as number, { requeue: false, reason: 'bad' }),
      ).toBe(true);
      expect(await source.inspect()).toEqual(view(2));
      expect(await source.stats(2)).toMatchObject({ dead: 0, deadLetters: { rejected: 1 } });
      expect(await dlq.inspect()).toEqual(view(0, { ready: ['a'] }));
      const moved = await dlq.job('a');
      expect(moved).toEqual({
        id: 'a',
        payload: { n: 1 },
        state: 'ready',
        deliveryCount: 0,
        publishedAt: 0,
        history: [{ token: 1, deliveredAt: 1, endedAt: 2, outcome: 'rejected', reason: 'bad' }],
        origin: { queue: sourceName, reason: 'bad', at: 2 },
      });
      const [again] = await dlq.reserve(3);
      expect(again).toMatchObject({ id: 'a', payload: { n: 1 }, deliveryCount: 1 });
    });

    it('R26 R13 a job out of deliveries moves at the expiry that kills it, with every attempt', async () => {
      const { dlq, source, sourceName } = await linked(h, { maxDeliveries: 2 });
      await source.publish(0, { id: 'a' });
      await source.reserve(0); // token 1, deadline 5
      await source.reserve(5); // expired at 5: token 2, deadline 10
      expect(await source.stats(10)).toMatchObject({
        ready: 0,
        dead: 0,
        deadLetters: { 'max-deliveries': 1 },
      });
      expect(await dlq.job('a')).toMatchObject({
        state: 'ready',
        deliveryCount: 0,
        history: [
          { token: 1, outcome: 'expired', endedAt: 5 },
          { token: 2, outcome: 'expired', endedAt: 10 },
        ],
        origin: { queue: sourceName, reason: 'max-deliveries', at: 10 },
      });
    });

    it('R26 R14 with the dead-letter queue missing or deleted the job stays in its own dead set', async () => {
      const missing = h.queueName('missing');
      const source = await h.queue({ deadLetterQueue: missing });
      await source.publish(0, { id: 'a' });
      const [first] = await source.reserve(0);
      await source.nack(1, first?.token as number, { requeue: false });
      expect(await source.inspect()).toEqual(
        view(1, { dead: [{ id: 'a', reason: 'rejected', deliveryCount: 1 }] }),
      );

      const { dlqName, source: other } = await linked(h);
      expect(await h.engine().deleteQueue(dlqName)).toBe(true);
      await other.publish(0, { id: 'b' });
      const [second] = await other.reserve(0);
      await other.nack(1, second?.token as number, { requeue: false });
      expect(await other.inspect()).toEqual(
        view(1, { dead: [{ id: 'b', reason: 'rejected', deliveryCount: 1 }] }),
      );
    });

    it('R26 R4 an id already present in the dead-letter queue keeps the job in its own dead set', async () => {
      const { dlq, source } = await linked(h);
      await dlq.publish(0, { id: 'a', payload: 'theirs' });
      await source.publish(0, { id: 'a', payload: 'mine' });
      const [delivery] = await source.reserve(0);
      await source.nack(1, delivery?.token as number, { requeue: false });
      expect((await source.inspect()).dead).toEqual([
        { id: 'a', reason: 'rejected', deliveryCount: 1 },
      ]);
      expect(await dlq.job('a')).toMatchObject({ payload: 'theirs' });
    });

    it('R26 R4 an id the target forgot while it sat idle is taken: its window counts to the arrival, not to its own last step', async () => {
      const dlqName = h.queueName('dlq');
      const dlq = await h.engine().queue(dlqName, { dedupWindow: 100 });
      const source = await h.engine().queue(h.queueName('src'), { deadLetterQueue: dlqName });
      const other = h.queueName('other');
      await h.engine().queue(other, { dedupWindow: 100 });
      for (const id of ['a', 'b']) await dlq.publish(0, { id });
      for (const delivery of await dlq.reserve(0, { max: 2 })) await dlq.ack(0, delivery.token);
      const otherQueue = await h.engine().queue(other);
      await otherQueue.publish(0, { id: 'b' });
      const [theirs] = await otherQueue.reserve(0);
      await otherQueue.ack(0, theirs?.token as number);
      // Nothing touches either target again; at 500 their windows (to 100) are long over.
      await source.publish(500, { id: 'a' });
      const [delivery] = await source.reserve(500);
      expect(await source.nack(500, delivery?.token as number, { requeue: false })).toBe(true);
      expect((await source.inspect()).dead).toEqual([]);
      expect(await dlq.job('a')).toMatchObject({ state: 'ready', deliveryCount: 0 });
      await source.publish(500, { id: 'b' });
      const [second] = await source.reserve(500);
      await source.nack(500, second?.token as number, { requeue: false });
      expect(await dlq.moveJobs(500, { ids: ['b'], to: other })).toBe(1);
      expect(await otherQueue.job('b')).toMatchObject({ state: 'ready' });
    });
    it('R26 a dead-letter queue that leads back to its queue is refused at configuration, changing nothing', async () => {
      const a = h.queueName('a');
      const b = h.queueName('b');
      await expectRejection(
        () => h.engine().queue(a, { deadLetterQueue: a }),
        ConflictError,
        'CONFLICT',
      );
      expect((await h.engine().listQueues()).map((info) => info.name)).not.toContain(a);
      await h.engine().queue(a, { deadLetterQueue: b });
      await expectRejection(
        () => h.engine().queue(b, { deadLetterQueue: a }),
        ConflictError,
        'CONFLICT',
      );
      await h.engine().queue(b);
      await expectRejection(
        () => h.engine().updateQueue(b, { deadLetterQueue: a }),
        ConflictError,
        'CONFLICT',
      );
      const c = h.queueName('c');
      await h.engine().queue(c, { deadLetterQueue: a });
      await expectRejection(
        () => h.engine().updateQueue(b, { deadLetterQueue: c }),
        ConflictError,
        'CONFLICT',
      );
      expect((await h.engine().queue(b)).name).toBe(b);
      expect(await (await h.engine().queue(b)).options()).not.toHaveProperty('deadLetterQueue');
      await expectRejection(
        () => h.engine().queue(h.queueName(), { deadLetterQueue: 'no/such' }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
    });

    it('R26 two changes at once that would link two queues to each other: one is refused, no loop is stored', async () => {
      const a = h.queueName('a');
      const b = h.queueName('b');
      await h.engine().queue(a);
      await h.engine().queue(b);
      const outcomes = await Promise.allSettled([
        h.engine().updateQueue(a, { deadLetterQueue: b }),
        h.engine().updateQueue(b, { deadLetterQueue: a }),
      ]);
      const refused = outcomes.flatMap((outcome) =>
        outcome.status === 'rejected' ? [outcome.reason] : [],
      );
      expect(refused).toHaveLength(1);
      expect(refused[0]).toBeInstanceOf(ConflictError);
      const c = h.queueName('c');
      const d = h.queueName('d');
      const created = await Promise.allSettled([
        h.engine().queue(c, { deadLetterQueue: d }),
        h.engine().queue(d, { deadLetterQueue: c }),
      ]);
      expect(created.filter((outcome) => outcome.status === 'rejected')).toHaveLength(1);
    });

    it('R26 the option is stored, shown, changed and removed (null)', async () => {
      const dlqName = h.queueName('dlq');
      const name = h.queueName();
      const q = await h.engine().queue(name, { deadLetterQueue: dlqName });
      expect(await q.options()).toMatchObject({ deadLetterQueue: dlqName });
      await h.engine().queue(name, { deadLetterQueue: dlqName }); // the same: opens
      await expectRejection(
        () => h.engine().queue(name, { deadLetterQueue: h.queueName('other') }),
        ConflictError,
        'CONFLICT',
      );
      expect(await h.engine().updateQueue(name, { deadLetterQueue: null })).not.toHaveProperty(
        'deadLetterQueue',
      );
      expect(
        (await h.engine().listQueues()).find((info) => info.name === name)?.options,
      ).not.toHaveProperty('deadLetterQueue');
    });

    it('R26 moveJobs sends each job back to its origin, keeping its id, payload and history, at deliveryCount 0', async () => {
      const { dlq, source } = await linked(h);
      await source.publishBatch(
        0,
        ['a', 'b', 'c'].map((id) => ({ id, payload: id })),
      );
      const deliveries = await source.reserve(0, { max: 3 });
      for (const d of deliveries) await source.nack(1, d.token, { requeue: false });
      await dlq.publish(2, { id: 'own' }); // no origin: stays
      expect((await dlq.inspect()).ready).toEqual(['a', 'b', 'c', 'own']);
      expect(await dlq.moveJobs(3, { max: 2 })).toBe(2);
      expect((await dlq.inspect()).ready).toEqual(['c', 'own']);
      expect((await source.inspect()).ready).toEqual(['a', 'b']);
      const back = await source.job('a');
      expect(back).toMatchObject({ id: 'a', payload: 'a', state: 'ready', deliveryCount: 0 });
      expect(back?.history).toHaveLength(1);
      expect(back).not.toHaveProperty('origin');
      expect(await dlq.moveJobs(4)).toBe(1);
      expect(await dlq.inspect()).toEqual(view(4, { ready: ['own'] }));
      // The ready jobs left keep their order and are handed out as usual.
      const [next] = await dlq.reserve(4);
      expect(next?.id).toBe('own');
      expect((await source.reserve(4, { max: 3 })).map((d) => d.id)).toEqual(['a', 'b', 'c']);
    });

    it('R26 moveJobs to a named queue, by ids; a job the target cannot take stays', async () => {
      const { dlq, source } = await linked(h);
      const otherName = h.queueName('other');
      const other = await h.engine().queue(otherName);
      await other.publish(0, { id: 'b' });
      await source.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      for (const d of await source.reserve(0, { max: 3 })) {
        await source.nack(1, d.token, { requeue: false });
      }
      expect(await dlq.moveJobs(2, { ids: ['b', 'c', 'nope'], to: otherName })).toBe(1);
      expect((await dlq.inspect()).ready).toEqual(['a', 'b']);
      expect((await other.inspect()).ready).toEqual(['b', 'c']);
      expect(await dlq.moveJobs(2, { to: h.queueName('missing') })).toBe(0);
      expect((await dlq.inspect()).ready).toEqual(['a', 'b']);
      await expectRejection(() => dlq.moveJobs(2, { to: '' }), ValidationError, 'INVALID_ARGUMENT');
      await expectRejection(() => dlq.moveJobs(2, { max: 0 }), ValidationError, 'INVALID_ARGUMENT');
    });

    it('R26 moveJobs with origins moves only the jobs that died in those queues, back or to a named queue', async () => {
      const { dlq, dlqName, source, sourceName } = await linked(h);
      const secondName = h.queueName('src2');
      const second = await h
        .engine()
        .queue(secondName, { visibility: 5, deadLetterQueue: dlqName });
      await source.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await second.publishBatch(0, [{ id: 'x' }, { id: 'y' }]);
      for (const queue of [source, second]) {
        for (const d of await queue.reserve(0, { max: 2 })) {
          await queue.nack(1, d.token, { requeue: false });
        }
      }
      await dlq.publish(2, { id: 'own' }); // no origin: never matches
      expect((await dlq.inspect()).ready).toEqual(['a', 'b', 'x', 'y', 'own']);
      expect(await dlq.moveJobs(3, { origins: [secondName] })).toBe(2);
      expect((await dlq.inspect()).ready).toEqual(['a', 'b', 'own']);
      expect((await second.inspect()).ready).toEqual(['x', 'y']);
      expect((await source.inspect()).ready).toEqual([]);
      // With `to`, the filter still picks by where each job died.
      const otherName = h.queueName('other');
      const other = await h.engine().queue(otherName);
      expect(await dlq.moveJobs(4, { origins: [sourceName], to: otherName, max: 1 })).toBe(1);
      expect((await other.inspect()).ready).toEqual(['a']);
      expect(await dlq.moveJobs(4, { origins: [] })).toBe(0);
      expect(await dlq.moveJobs(4, { origins: [h.queueName('never')] })).toBe(0);
      expect((await dlq.inspect()).ready).toEqual(['b', 'own']);
      await expectRejection(
        () => dlq.moveJobs(5, { origins: [''] }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
      await expectRejection(
        () => dlq.moveJobs(5, { origins: sourceName as unknown as string[] }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
      expect((await dlq.inspect()).ready).toEqual(['b', 'own']);
    });

    it('R26 moveJobs by ids moves them in the order named, max counting from the first named', async () => {
      const from = await h.engine().queue(h.queueName('from'));
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      await from.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd', delay: 5 }]);
      expect(await from.moveJobs(1, { ids: ['c', 'd', 'a'], to: toName, max: 2 })).toBe(2);
      expect(await to.inspect()).toMatchObject({ ready: ['c', 'd'] });
      expect(await from.inspect()).toMatchObject({ ready: ['a', 'b'], delayed: [] });
    });

    it('R26 R23 R24 a dead-lettered job keeps its priority and group; its group goes on in the source', async () => {
      const { dlq, source, sourceName } = await linked(h);
      await dlq.publish(0, { id: 'low' });
      await source.publishBatch(0, [
        { id: 'g1', group: 'g', priority: 5 },
        { id: 'g2', group: 'g', priority: 5 },
      ]);
      const [g1] = await source.reserve(0);
      expect(g1).toMatchObject({ id: 'g1', group: 'g' });
      expect(await source.nack(1, g1?.token as number, { requeue: false })).toBe(true);
      // g2 was waiting behind g1: now it is ready in the source.
      expect(await source.inspect()).toMatchObject({ ready: ['g2'] });
      expect(await source.stats(1)).toMatchObject({ ready: 1, waiting: 0 });
      // In the dead-letter queue g1 stands before the job of priority 0, in its group.
      expect(await dlq.job('g1')).toMatchObject({
        state: 'ready',
        priority: 5,
        group: 'g',
        origin: { queue: sourceName, reason: 'rejected' },
      });
      await dlq.publish(1, { id: 'g-later', group: 'g' });
      expect(await dlq.inspect()).toMatchObject({ ready: ['g1', 'low'], waiting: ['g-later'] });
      expect((await dlq.reserve(1, { max: 5 })).map((d) => [d.id, d.group])).toEqual([
        ['g1', 'g'],
        ['low', undefined],
      ]);
    });

    it('R26 R23 R24 moveJobs keeps priority and group; the moved job joins the back of its group there and lets its own group go on', async () => {
      const { dlq } = await linked(h);
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      await to.publish(0, { id: 't1', group: 'g' });
      await dlq.publishBatch(0, [
        { id: 'm1', group: 'g', priority: 3 },
        { id: 'm2', group: 'g', priority: 3 },
        { id: 'p', priority: 7 },
      ]);
      expect(await dlq.moveJobs(1, { ids: ['m1', 'p'], to: toName })).toBe(2);
      // m2 waited behind m1 in the source: it is ready now.
      expect(await dlq.inspect()).toMatchObject({ ready: ['m2'] });
      expect(await dlq.job('m2')).toMatchObject({ state: 'ready', priority: 3, group: 'g' });
      // In the target m1 waits behind t1 of its group; p stands first by its priority.
      expect(await to.inspect()).toMatchObject({ ready: ['p', 't1'], waiting: ['m1'] });
      expect(await to.job('m1')).toMatchObject({ state: 'waiting', priority: 3, group: 'g' });
      const taken = await to.reserve(1, { max: 5 });
      expect(taken.map((d) => d.id)).toEqual(['p', 't1']);
      expect(await to.ack(2, taken[1]?.token as number)).toBe(true);
      expect(await to.inspect()).toMatchObject({ ready: ['m1'] });
    });

    it('R26 R24 moveJobs moves a group whole, in its order: each member goes on as the one before it moves', async () => {
      const { dlq } = await linked(h);
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      await dlq.publishBatch(0, [
        { id: 'g1', group: 'g' },
        { id: 'g2', group: 'g' },
        { id: 'g3', group: 'g' },
        { id: 'solo' },
      ]);
      expect(await dlq.inspect()).toMatchObject({ ready: ['g1', 'solo'], waiting: ['g2', 'g3'] });
      // At most 2: g1 and solo in the first pass; g2, gone on, is left for a later call.
      expect(await dlq.moveJobs(1, { to: toName, max: 2 })).toBe(2);
      expect(await dlq.inspect()).toMatchObject({ ready: ['g2'], waiting: ['g3'] });
      expect(await dlq.moveJobs(1, { to: toName })).toBe(2);
      expect(await dlq.inspect()).toEqual(view(1));
      expect(await to.inspect()).toMatchObject({ ready: ['g1', 'solo'], waiting: ['g2', 'g3'] });
      // Named, a waiting member moves once the one before it has: all of a group by one call.
      await dlq.publishBatch(1, [
        { id: 'h1', group: 'h' },
        { id: 'h2', group: 'h' },
        { id: 'h3', group: 'h' },
      ]);
      expect(await dlq.moveJobs(1, { ids: ['h3', 'h2', 'h1'], to: toName })).toBe(3);
      expect(await dlq.inspect()).toEqual(view(1));
      expect(await to.inspect()).toMatchObject({
        ready: ['g1', 'solo', 'h1'],
        waiting: ['g2', 'g3', 'h2', 'h3'],
      });
    });

    it('R26 delayed jobs move too and arrive ready; active ones stay', async () => {
      const { dlq } = await linked(h);
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      await dlq.publishBatch(0, [{ id: 'late', delay: 10 }, { id: 'busy' }]);
      await dlq.reserve(0);
      expect(await dlq.moveJobs(1, { to: toName })).toBe(1);
      expect(await dlq.inspect()).toMatchObject({
        ready: [],
        delayed: [],
        active: [{ id: 'busy' }],
      });
      expect((await to.inspect()).ready).toEqual(['late']);
    });
  });
});
