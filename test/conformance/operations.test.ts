import { describe, expect, it } from 'vitest';
import { UnknownDeliveryError } from '../../src/client/index.js';
import {
  build,
  ClockError,
  NotFoundError,
  type Operation,
  parseOperation,
  SessionClosedError,
  ValidationError,
} from '../../src/core/index.js';
import { expectRejection, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R20 a batch of operations: execute', () => {
    it('R20 answers each operation of a batch in order, as the friendly methods would', async () => {
      const q = await h.queue({ visibility: 5 });
      const outcomes = await q.execute(0, [
        parseOperation({ type: 'publish', jobs: [{ id: 'a' }, { id: 'b', payload: { n: 1 } }] }),
        parseOperation({ type: 'reserve', max: 1 }),
        parseOperation({ type: 'ack', tokens: [1, 1, 9] }),
        parseOperation({ type: 'reserve' }),
        parseOperation({ type: 'extend', token: 2, visibility: 8 }),
      ]);
      // The HTTP client names a delivery by the receipt it received, so a batch cannot settle
      // a delivery that the same batch reserves: those entries are refused before sending.
      const refusedUnknown = { ok: false, error: expect.any(UnknownDeliveryError) };
      expect(outcomes).toEqual([
        {
          ok: true,
          value: [
            { id: 'a', duplicate: false },
            { id: 'b', duplicate: false },
          ],
        },
        {
          ok: true,
          value: [
            {
              token: 1,
              id: 'a',
              payload: undefined,
              deadline: 5,
              deliveryCount: 1,
              redelivered: false,
            },
          ],
        },
        h.viaClient ? refusedUnknown : { ok: true, value: [true, false, false] },
        {
          ok: true,
          value: [
            {
              token: 2,
              id: 'b',
              payload: { n: 1 },
              deadline: 5,
              deliveryCount: 1,
              redelivered: false,
            },
          ],
        },
        h.viaClient ? refusedUnknown : { ok: true, value: 8 },
      ]);
      expect(await q.inspect()).toMatchObject({
        ready: [],
        active: h.viaClient
          ? [
              { token: 1, id: 'a', deadline: 5 },
              { token: 2, id: 'b', deadline: 5 },
            ]
          : [{ token: 2, id: 'b', deadline: 8 }],
      });
    });

    it('R20 consecutive reserves and acks of a batch answer each as if run one by one', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(
        0,
        ['a', 'b', 'c', 'd', 'e', 'f'].map((id) => ({ id })),
      );
      const taken = await q.execute(1, [
        build.reserve({ max: 2 }),
        build.reserve({ max: 1 }),
        build.reserve({ max: 1, visibility: 9 }),
        build.reserve({ max: 1 }),
      ]);
      const ids = (outcome: (typeof taken)[number] | undefined) =>
        outcome?.ok ? (outcome.value as { id: string; deadline: number }[]) : [];
      expect(taken.map((outcome) => ids(outcome).map((d) => [d.id, d.deadline]))).toEqual([
        [
          ['a', 6],
          ['b', 6],
        ],
        [['c', 6]],
        [['d', 10]],
        [['e', 6]],
      ]);
      const tokens = taken.flatMap((outcome) =>
        ids(outcome).map((d) => (d as unknown as { token: number }).token),
      );
      expect(tokens).toEqual([1, 2, 3, 4, 5]);
      // Acks in a row, one of them twice over and one stale: each answered for its own tokens.
      const acks = await q.execute(2, [
        build.ackMany([1, 2]),
        build.ack(2),
        build.ack(9),
        build.ackMany([3, 4]),
        build.reserve({ max: 5 }),
        build.ack(5),
      ]);
      // The HTTP client refuses a token it never received before sending (see above).
      const unknown = h.viaClient
        ? { ok: false, error: expect.any(UnknownDeliveryError) }
        : { ok: true, value: [false] };
      expect(acks.slice(0, 4).concat(acks.slice(5))).toEqual([
        { ok: true, value: [true, true] },
        { ok: true, value: [false] },
        unknown,
        { ok: true, value: [true, true] },
        { ok: true, value: [true] },
      ]);
      expect(ids(acks[4]).map((d) => d.id)).toEqual(['f']);
      expect(await q.stats(2)).toMatchObject({
        acks: 5,
        staleAcks: h.viaClient ? 1 : 2,
        active: 1,
        ready: 0,
      });
    });

    it('R20 R22 R24 an auto-ack reserve of a batch takes the member its group went on to at the reserve before it', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [
        { id: 'g1', group: 'G' },
        { id: 'g2', group: 'G' },
        { id: 'g3', group: 'G' },
        { id: 'x' },
      ]);
      const taken = await q.execute(1, [
        build.reserve({ max: 2, ack: 'auto' }),
        build.reserve({ max: 2, ack: 'auto' }),
      ]);
      expect(
        taken.map((outcome) =>
          outcome.ok ? (outcome.value as { id: string }[]).map((d) => d.id) : outcome.error,
        ),
      ).toEqual([['g1', 'x'], ['g2']]);
      expect(await q.inspect()).toEqual(view(1, { ready: ['g3'] }));
    });

    it('R3 R20 R30 a member an ack of a batch lets go on past its expiry dies at the next ack of the batch', async () => {
      const q = await h.queue({ retention: 5 });
      await q.publishBatch(0, [{ id: 'g1', group: 'G' }, { id: 'g2', group: 'G' }, { id: 'x' }]);
      await q.reserve(0, { max: 2 }); // 1 g1, 2 x
      const acks = await q.execute(6, [build.ack(1), build.ack(2)]);
      expect(acks).toEqual([
        { ok: true, value: [true] },
        { ok: true, value: [true] },
      ]);
      // g2 went on at the first ack, past its retention: the second ack's R3 ended it.
      expect(await q.inspect()).toEqual(
        view(6, { dead: [{ id: 'g2', reason: 'expired', deliveryCount: 0 }] }),
      );
    });

    it('R20 one refused operation does not fail the others, and changes nothing itself', async () => {
      const q = await h.queue({ visibility: 5 });
      const session = await q.openSession(0);
      await q.closeSession(0, session);
      const outcomes = await q.execute(1, [
        build.publish({ id: 'a' }),
        build.heartbeat(session),
        build.publish({ id: 'b', payload: 1n }),
        build.publish({ id: 'c' }),
      ]);
      expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, false, false, true]);
      expect(outcomes[1]).toMatchObject({ ok: false, error: expect.any(SessionClosedError) });
      expect(outcomes[2]).toMatchObject({ ok: false, error: expect.any(ValidationError) });
      expect(await q.inspect()).toEqual(view(1, { ready: ['a', 'c'] }));
    });

    it('R20 a now behind the clock refuses the whole batch before anything changes', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(3, { id: 'a' });
      const operations: Operation[] = [build.publish({ id: 'b' }), build.reserve()];
      await expectRejection(() => q.execute(2, operations), ClockError, 'INVALID_CLOCK');
      expect(await q.inspect()).toEqual(view(3, { ready: ['a'] }));
      expect(await q.execute(3, [])).toEqual([]);
      // The HTTP client sends no request for an empty batch: nothing reaches the server's clock.
      if (!h.viaClient) {
        await expectRejection(() => q.execute(2, []), ClockError, 'INVALID_CLOCK');
      }
    });

    it('R20 a batch of a queue that does not exist is refused whole with NOT_FOUND, whatever its operations', async () => {
      const name = h.queueName('gone');
      const q = await h.engine().queue(name, { visibility: 5 });
      await q.publish(0, { id: 'a' });
      await q.reserve(0);
      expect(await h.engine().deleteQueue(name)).toBe(true);
      const gone = h.engine().handle(name);
      const batches: Operation[][] = [
        // Reserves with the same options, as acks alone, run as one call on the SQL engines.
        [build.reserve(), build.reserve({ max: 2 })],
        [build.publish({ id: 'b' }), build.reserve()],
      ];
      // The HTTP client forgets the receipts of a queue it deleted: it refuses those tokens itself.
      if (!h.viaClient) batches.push([build.ack(1), build.ack(1)], [build.ack(1), build.stats()]);
      for (const operations of batches) {
        await expectRejection(() => gone.execute(1, operations), NotFoundError, 'NOT_FOUND');
      }
    });

    // Through a server, a session handle it never signed is refused where the call enters.
    it.skipIf(h.viaClient)(
      'R2 R20 a refused now is a ClockError before a session the queue never opened is looked at',
      async () => {
        const q = await h.queue({ visibility: 5 });
        await q.publish(3, { id: 'a' });
        const never = 's99';
        for (const operations of [
          [build.heartbeat(never)],
          [build.reserve({ session: never }), build.publish({ id: 'b' })],
          [build.closeSession(never), build.ackUpTo(never, 1)],
          // A payload that is no JSON is refused by the storage, after the clock too.
          [build.publish({ id: 'c', payload: { list: [1n] } })],
        ]) {
          await expectRejection(() => q.execute(2, operations), ClockError, 'INVALID_CLOCK');
          await expectRejection(() => q.execute(1.5, operations), ClockError, 'INVALID_CLOCK');
        }
        await expectRejection(() => q.heartbeat(2, never), ClockError, 'INVALID_CLOCK');
        await expectRejection(() => q.reserve(2, { session: never }), ClockError, 'INVALID_CLOCK');
        await expectRejection(() => q.nackUpTo(2, never, 1), ClockError, 'INVALID_CLOCK');
        expect(await q.inspect()).toEqual(view(3, { ready: ['a'] }));
        // At an accepted now, the session is what is refused.
        await expectRejection(() => q.heartbeat(3, never), ValidationError, 'INVALID_ARGUMENT');
      },
    );
  });

  describe('R19 purgeQueue', () => {
    it('R19 removes ready, delayed and active jobs, counts them, and keeps the dead', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd', delay: 10 }]);
      const [first, second] = await q.reserve(0, { max: 2 });
      await q.nack(1, second?.token as number, { requeue: false });
      expect(await q.purgeQueue(2)).toEqual({ ready: 1, delayed: 1, active: 1, dead: 0 });
      expect(await q.inspect()).toEqual(
        view(2, { dead: [{ id: 'b', reason: 'rejected', deliveryCount: 1 }] }),
      );
      // The purged delivery's token is refused from then on (R8), and counted as stale.
      expect(await q.ack(3, first?.token as number)).toBe(false);
      expect(await q.stats(3)).toMatchObject({ purged: 3, staleAcks: 1, active: 0, ready: 0 });
      // Ids of purged jobs are free again.
      expect(await q.publish(3, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
    });

    it('R19 with dead: true the dead set goes too; tokens keep counting up', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await q.reserve(0);
      await q.nack(0, 1, { requeue: false });
      expect(await q.purgeQueue(1, { dead: true })).toEqual({
        ready: 1,
        delayed: 0,
        active: 0,
        dead: 1,
      });
      expect(await q.inspect()).toEqual(view(1));
      await q.publish(1, { id: 'c' });
      expect((await q.reserve(1)).map((delivery) => delivery.token)).toEqual([2]);
    });

    it('R19 releases session deliveries without ending the session', async () => {
      const q = await h.queue({ visibility: 5 });
      const session = await q.openSession(0, { prefetch: 1 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      expect(await q.reserve(0, { session })).toHaveLength(1);
      await q.purgeQueue(1);
      await q.publish(1, { id: 'c' });
      // The session's prefetch room is free again.
      expect((await q.reserve(1, { session })).map((delivery) => delivery.id)).toEqual(['c']);
    });

    it('R19 a bad option is refused before anything changes', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'a' });
      // biome-ignore lint/suspicious/noExplicitAny: bad input on purpose, past the types
      const bad: any = { dead: 'yes' };
      await expectRejection(() => q.purgeQueue(1, bad), ValidationError, 'INVALID_ARGUMENT');
      expect(await q.inspect()).toEqual(view(0, { ready: ['a'] }));
    });
  });
});
