import { describe, expect, it } from 'vitest';
import {
  ClosedError,
  ConflictError,
  NotFoundError,
  type QueueOptions,
  ValidationError,
} from '../../src/core/index.js';
import { expectRejection, view } from './assertions.js';
import { postgresUrl, useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

const DEFAULTS = {
  visibility: 30_000,
  prefetch: Number.POSITIVE_INFINITY,
  maxDeliveries: 10,
  maxLease: Number.POSITIVE_INFINITY,
  dedupWindow: 0,
};

const BAD_NAMES: unknown[] = [
  '',
  '.hidden',
  '-dash',
  '_under',
  'with space',
  'a/b',
  'a:b',
  'ünï',
  'line\nbreak',
  'x'.repeat(81),
  7,
  null,
  undefined,
];

const BAD_OPTIONS: [string, unknown][] = [
  ['visibility 0', { visibility: 0 }],
  ['visibility 1.5', { visibility: 1.5 }],
  ['visibility Infinity', { visibility: Infinity }],
  ['prefetch 0', { prefetch: 0 }],
  ['maxDeliveries 0', { maxDeliveries: 0 }],
  ['maxDeliveries 2.5', { maxDeliveries: 2.5 }],
  ['maxLease -1', { maxLease: -1 }],
  ['dedupWindow -1', { dedupWindow: -1 }],
  ['dedupWindow Infinity', { dedupWindow: Infinity }],
  ['retention 0', { retention: 0 }],
  ['retention -5', { retention: -5 }],
  ['retention 1.5', { retention: 1.5 }],
  ['retention "60000"', { retention: '60000' }],
  ['maxLength 0', { maxLength: 0 }],
  ['maxLength 2.5', { maxLength: 2.5 }],
  ['overflow "drop-head"', { maxLength: 5, overflow: 'drop-head' }],
  ['overflow 1', { overflow: 1 }],
  ['an unknown option', { visibilityMs: 5 }],
  ['options that are a string', 'fast'],
];

// biome-ignore lint/suspicious/noExplicitAny: bad input on purpose, past the types
const bad = (value: unknown): any => value;

describeEngines(engines, (h) => {
  describe('queues of an engine', () => {
    it('a handle by name reads and creates nothing: NOT_FOUND until the queue exists, then that queue', async () => {
      const name = h.queueName('by-handle');
      const handle = h.engine().handle(name);
      await expectRejection(() => handle.publish(0, { id: 'a' }), NotFoundError, 'NOT_FOUND');
      expect((await h.engine().listQueues()).some((info) => info.name === name)).toBe(false);
      await h.engine().queue(name, { visibility: 7 });
      expect((await handle.publish(0, { id: 'a' })).id).toBe('a');
      expect((await handle.reserve(0))[0]).toMatchObject({ id: 'a', deadline: 7 });
      expect(() => h.engine().handle('not a name!')).toThrow(ValidationError);
    });

    it('engine.queue(name, options) creates the queue with defaults filled in; listQueues shows it', async () => {
      const name = h.queueName('create');
      const q = await h.engine().queue(name, { visibility: 5, maxDeliveries: 3 });
      expect(q.name).toBe(name);
      const options = { ...DEFAULTS, visibility: 5, maxDeliveries: 3 };
      expect(await q.options()).toEqual(options);
      expect(await q.inspect()).toEqual(view(0));
      const listed = (await h.engine().listQueues()).filter((info) => info.name === name);
      expect(listed).toEqual([{ name, options }]);
      const plain = await h.engine().queue(h.queueName('defaults'));
      expect(await plain.options()).toEqual(DEFAULTS);
    });

    it('listQueues lists queues by name in code-unit order on every engine, whatever their creation order', async () => {
      const stem = h.queueName('order');
      const names = ['zeta', 'Alpha', 'mid', 'alpha', 'B-2', 'B.1', '9'].map((each) =>
        h.deleteAfter(`${stem}${each}`),
      );
      for (const name of names) await h.engine().queue(name);
      const listed = (await h.engine().listQueues())
        .map((info) => info.name)
        .filter((name) => names.includes(name));
      expect(listed).toEqual(
        ['9', 'Alpha', 'B-2', 'B.1', 'alpha', 'mid', 'zeta'].map((each) => `${stem}${each}`),
      );
    });

    it('re-opening a queue with the same options, a subset of them or none reaches the same queue', async () => {
      const name = h.queueName('reopen');
      const options: QueueOptions = { visibility: 5, prefetch: 2, maxLease: 50 };
      const first = await h.engine().queue(name, options);
      await first.publish(3, { id: 'a' });
      for (const again of [options, { visibility: 5 }, {}, undefined, { maxDeliveries: 10 }]) {
        const second = await h.engine().queue(name, again);
        expect(await second.inspect()).toEqual(view(3, { ready: ['a'] }));
      }
      const second = await h.engine().queue(name);
      expect((await second.reserve(4))[0]).toMatchObject({ token: 1, id: 'a', deadline: 9 });
      expect(await first.inspect()).toEqual(
        view(4, { active: [{ token: 1, id: 'a', deadline: 9, deliveryCount: 1 }] }),
      );
    });

    it('re-opening a queue with different options is a ConflictError (CONFLICT) and changes nothing', async () => {
      const name = h.queueName('conflict');
      const q = await h.engine().queue(name, { visibility: 5 });
      await q.publish(1, { id: 'a' });
      for (const other of [
        { visibility: 6 },
        { visibility: 5, prefetch: 1 },
        { maxDeliveries: Number.POSITIVE_INFINITY },
        { dedupWindow: 1 },
      ]) {
        await expectRejection(() => h.engine().queue(name, other), ConflictError, 'CONFLICT');
      }
      expect(await q.options()).toEqual({ ...DEFAULTS, visibility: 5 });
      expect(await q.inspect()).toEqual(view(1, { ready: ['a'] }));
    });

    it('creating one queue twice at once with different options: one is created, the other is a ConflictError', async () => {
      const name = h.queueName('twice');
      const outcomes = await Promise.allSettled([
        h.engine().queue(name, { visibility: 5, deadLetterQueue: h.queueName('dlq') }),
        h.engine().queue(name, { visibility: 6, deadLetterQueue: h.queueName('dlq') }),
      ]);
      const refused = outcomes.flatMap((outcome) =>
        outcome.status === 'rejected' ? [outcome.reason] : [],
      );
      expect(refused).toHaveLength(1);
      expect(refused[0]).toBeInstanceOf(ConflictError);
      const created = outcomes.findIndex((outcome) => outcome.status === 'fulfilled');
      const queue = await h.engine().queue(name);
      expect((await queue.options()).visibility).toBe(created === 0 ? 5 : 6);
    });

    it.each(BAD_OPTIONS)(
      'engine.queue with %s is a ValidationError and creates nothing',
      async (_label, options) => {
        const name = h.queueName('bad-options');
        await expectRejection(
          () => h.engine().queue(name, bad(options)),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        expect((await h.engine().listQueues()).map((info) => info.name)).not.toContain(name);
      },
    );

    it.each(BAD_OPTIONS)(
      'engine.queue of an existing queue with %s is a ValidationError too, not a conflict, and changes nothing',
      async (_label, options) => {
        const name = h.queueName('bad-options');
        const before = await (await h.engine().queue(name)).options();
        await expectRejection(
          () => h.engine().queue(name, bad(options)),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        expect(await h.engine().handle(name).options()).toEqual(before);
      },
    );

    it('updateQueue changes the named options only; delivered leases keep their deadlines', async () => {
      const name = h.queueName('update');
      const q = await h.engine().queue(name, { visibility: 5, maxDeliveries: 4 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await q.reserve(0); // deadline 5
      const updated = { ...DEFAULTS, visibility: 20, maxDeliveries: 4, prefetch: 3 };
      expect(await h.engine().updateQueue(name, { visibility: 20, prefetch: 3 })).toEqual(updated);
      expect(await q.options()).toEqual(updated);
      expect((await h.engine().listQueues()).filter((info) => info.name === name)).toEqual([
        { name, options: updated },
      ]);
      expect((await q.reserve(1))[0]).toMatchObject({ token: 2, id: 'b', deadline: 21 });
      expect(await q.inspect()).toEqual(
        view(1, {
          active: [
            { token: 1, id: 'a', deadline: 5, deliveryCount: 1 },
            { token: 2, id: 'b', deadline: 21, deliveryCount: 1 },
          ],
        }),
      );
      await h.engine().queue(name, { visibility: 20 });
      await expectRejection(
        () => h.engine().queue(name, { visibility: 5 }),
        ConflictError,
        'CONFLICT',
      );
    });

    it('ensureQueue says whether this call created the queue; a conflict creates nothing', async () => {
      const name = h.queueName('ensure');
      const first = await h.engine().ensureQueue(name, { visibility: 5 });
      expect(first.created).toBe(true);
      expect(await first.handle.options()).toEqual({ ...DEFAULTS, visibility: 5 });
      expect((await h.engine().ensureQueue(name)).created).toBe(false);
      await expectRejection(
        () => h.engine().ensureQueue(name, { visibility: 6 }),
        ConflictError,
        'CONFLICT',
      );
      expect(await h.engine().deleteQueue(name)).toBe(true);
      expect((await h.engine().ensureQueue(name, { visibility: 7 })).created).toBe(true);
    });

    it('updateQueue: an option given as undefined keeps its value; null clears it', async () => {
      const name = h.queueName('update-undefined');
      const dlq = h.queueName('update-undefined-dlq');
      await h.engine().queue(dlq);
      const set = {
        visibility: 100,
        deadLetterQueue: dlq,
        paused: true,
        maxLength: 5,
        retention: 60_000,
      };
      const q = await h.engine().queue(name, set);
      const updated = { ...DEFAULTS, ...set, maxDeliveries: 3 };
      expect(
        await h.engine().updateQueue(name, {
          maxDeliveries: 3,
          visibility: undefined,
          deadLetterQueue: undefined,
          paused: undefined,
          maxLength: undefined,
          retention: undefined,
        }),
      ).toEqual(updated);
      expect(await q.options()).toEqual(updated);
      const { deadLetterQueue: _cleared, ...rest } = updated;
      expect(await h.engine().updateQueue(name, { deadLetterQueue: null })).toEqual(rest);
    });

    it('updateQueue refuses options that are not an object and changes nothing', async () => {
      const name = h.queueName('update-not-object');
      const q = await h.engine().queue(name, { visibility: 5 });
      for (const options of [null, undefined, 'x', 5, [{ visibility: 6 }]]) {
        await expectRejection(
          () => h.engine().updateQueue(name, bad(options)),
          ValidationError,
          'INVALID_ARGUMENT',
        );
      }
      expect(await q.options()).toEqual({ ...DEFAULTS, visibility: 5 });
    });

    it('updateQueue refuses bad options (ValidationError), a missing queue (NotFoundError) and bad names', async () => {
      const name = h.queueName('update-bad');
      const q = await h.engine().queue(name, { visibility: 5 });
      for (const [, options] of BAD_OPTIONS) {
        await expectRejection(
          () => h.engine().updateQueue(name, bad(options)),
          ValidationError,
          'INVALID_ARGUMENT',
        );
      }
      expect(await q.options()).toEqual({ ...DEFAULTS, visibility: 5 });
      await expectRejection(
        () => h.engine().updateQueue(h.queueName('missing'), { visibility: 5 }),
        NotFoundError,
        'NOT_FOUND',
      );
      await expectRejection(
        () => h.engine().updateQueue('bad name', { visibility: 5 }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
    });

    it('deleteQueue removes the queue and every job in it; true once, then false', async () => {
      const name = h.queueName('delete');
      const q = await h.engine().queue(name, { visibility: 5, dedupWindow: 100 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c', delay: 5 }]);
      const s = await q.openSession(0);
      await q.reserve(1, { session: s });
      await q.reserve(1);
      await q.ack(1, 2);
      expect(await h.engine().deleteQueue(name)).toBe(true);
      expect(await h.engine().deleteQueue(name)).toBe(false);
      expect((await h.engine().listQueues()).map((info) => info.name)).not.toContain(name);
      await expectRejection(
        () => h.engine().updateQueue(name, { visibility: 5 }),
        NotFoundError,
        'NOT_FOUND',
      );
      const again = await h.engine().queue(name, { visibility: 7 });
      expect(await again.options()).toEqual({ ...DEFAULTS, visibility: 7 });
      expect(await again.inspect()).toEqual(view(0));
      expect(await again.job('a')).toBeUndefined();
      expect(await again.publish(0, { id: 'b' })).toEqual({ id: 'b', duplicate: false });
      expect(await again.deadLetters()).toEqual([]);
      expect(await again.stats(0)).toMatchObject({ published: 1, deliveries: 0, sessions: 0 });
    });

    it('a handle of a deleted queue is refused NOT_FOUND, changing nothing; it reaches the queue made again under its name', async () => {
      const name = h.queueName('held');
      const held = await h.engine().queue(name, { visibility: 5 });
      await held.publish(0, { id: 'a' });
      expect(await h.engine().deleteQueue(name)).toBe(true);
      await expectRejection(() => held.publish(0, { id: 'order-1' }), NotFoundError, 'NOT_FOUND');
      await expectRejection(() => held.reserve(0), NotFoundError, 'NOT_FOUND');
      await expectRejection(() => held.stats(0), NotFoundError, 'NOT_FOUND');
      await expectRejection(() => held.inspect(), NotFoundError, 'NOT_FOUND');
      expect((await h.engine().listQueues()).map((info) => info.name)).not.toContain(name);
      const again = await h.engine().queue(name, { visibility: 5 });
      expect(await again.job('order-1')).toBeUndefined();
      expect(await held.publish(0, { id: 'b' })).toEqual({ id: 'b', duplicate: false });
      expect(await again.job('b')).toMatchObject({ state: 'ready' });
      expect((await again.inspect()).ready).toEqual(['b']);
    });

    it.each(BAD_NAMES)(
      'queue names: %j is refused with a ValidationError by queue, updateQueue and deleteQueue',
      async (name) => {
        const engine = h.engine();
        await expectRejection(() => engine.queue(bad(name)), ValidationError, 'INVALID_ARGUMENT');
        await expectRejection(
          () => engine.updateQueue(bad(name), { visibility: 5 }),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        await expectRejection(
          () => engine.deleteQueue(bad(name)),
          ValidationError,
          'INVALID_ARGUMENT',
        );
      },
    );

    it('queue names: 80 characters of letters, digits, "_", "-" and "." starting alphanumeric are fine', async () => {
      const base = h.queueName('long');
      const names = [
        h.deleteAfter(`${base}-${'x'.repeat(80 - base.length - 1)}`),
        h.deleteAfter(`${h.queueName('Mixed.Case_9')}.a-b_c`),
      ];
      expect(names[0]).toHaveLength(80);
      for (const name of names) await h.engine().queue(name);
      const listed = (await h.engine().listQueues()).map((info) => info.name);
      for (const name of names) expect(listed).toContain(name);
      for (const name of names) expect(await h.engine().deleteQueue(name)).toBe(true);
    });

    it('R6 several named queues are independent: own clock, own tokens from 1, own ids', async () => {
      const one = await h.queue({ visibility: 5 });
      const two = await h.queue({ visibility: 8 });
      await one.publish(100, { id: 'same', payload: 1 });
      expect(await two.publish(1, { id: 'same', payload: 2 })).toEqual({
        id: 'same',
        duplicate: false,
      });
      expect(await one.reserve(100)).toEqual([
        { token: 1, id: 'same', payload: 1, deadline: 105, deliveryCount: 1, redelivered: false },
      ]);
      expect(await two.reserve(2)).toEqual([
        { token: 1, id: 'same', payload: 2, deadline: 10, deliveryCount: 1, redelivered: false },
      ]);
      expect(await two.ack(3, 1)).toBe(true);
      expect(await one.inspect()).toEqual(
        view(100, { active: [{ token: 1, id: 'same', deadline: 105, deliveryCount: 1 }] }),
      );
      expect(await two.inspect()).toEqual(view(3));
      await one.publish(100, { id: 'next' });
      expect((await one.reserve(100))[0]?.token).toBe(2);
      expect(await two.queueTime()).toBe(3);
    });

    it('an engine reports its target and capabilities', async () => {
      const engine = h.engine();
      expect(typeof engine.target).toBe('string');
      const password = h.name === 'postgres' ? new URL(postgresUrl()).password : '';
      if (password !== '') expect(engine.target).not.toContain(password);
      expect(Object.keys(engine.capabilities).sort()).toEqual([
        'crossProcessWakeups',
        'durable',
        'shared',
        'transactions',
      ]);
      for (const value of Object.values(engine.capabilities)) expect(typeof value).toBe('boolean');
    });

    it('a closed engine refuses every call with a ClosedError (CLOSED)', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'a' });
      const name = h.queueName('closed');
      await h.engine().queue(name);
      const engine = h.engine();
      await h.close();
      await expectRejection(() => engine.queue(name), ClosedError, 'CLOSED');
      await expectRejection(() => engine.listQueues(), ClosedError, 'CLOSED');
      await expectRejection(() => engine.updateQueue(name, {}), ClosedError, 'CLOSED');
      await expectRejection(() => engine.deleteQueue(name), ClosedError, 'CLOSED');
      await expectRejection(() => q.publish(1, { id: 'b' }), ClosedError, 'CLOSED');
      await expectRejection(() => q.reserve(1), ClosedError, 'CLOSED');
      await expectRejection(() => q.inspect(), ClosedError, 'CLOSED');
    });
  });
});
