import { describe, expect, it } from 'vitest';
import { LeaseQueue, ValidationError } from '../../src/core/index.js';
import { expectRefusedUnchanged, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/** JSON payloads that must come back exactly as published. */
const PAYLOADS: unknown[] = [
  null,
  0,
  -1.25,
  // The edges of what JSON numbers carry exactly (the server refuses what lies beyond them).
  Number.MAX_SAFE_INTEGER,
  -Number.MAX_SAFE_INTEGER,
  0.1,
  1.5e-300,
  -7.25e-10,
  'text with "quotes", \\ and ünïcødé ✓',
  '',
  true,
  false,
  [],
  [1, 'two', null, { three: [3] }],
  {},
  { b: 1, a: { nested: ['x', { deep: true }] }, '': 'empty key' },
];

describeEngines(engines, (h) => {
  describe('R4 publish', () => {
    it('R4 publish appends to the back of ready; delay > 0 puts the job in delayed until now + delay', async () => {
      const q = await h.queue({ visibility: 5 });
      expect(await q.publish(0, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
      expect(await q.publish(2, { id: 'b', delay: 0 })).toEqual({ id: 'b', duplicate: false });
      expect(await q.publish(3, { id: 'c', delay: 4 })).toEqual({ id: 'c', duplicate: false });
      expect(await q.publish(3, { id: 'd' })).toEqual({ id: 'd', duplicate: false });
      expect(await q.inspect()).toEqual(
        view(3, { ready: ['a', 'b', 'd'], delayed: [{ id: 'c', availableAt: 7 }] }),
      );
      expect(await q.job('c')).toEqual({
        id: 'c',
        payload: undefined,
        state: 'delayed',
        deliveryCount: 0,
        publishedAt: 3,
        availableAt: 7,
        history: [],
      });
      await q.stats(6);
      expect((await q.inspect()).ready).toEqual(['a', 'b', 'd']);
      await q.stats(7);
      expect(await q.inspect()).toEqual(view(7, { ready: ['a', 'b', 'd', 'c'] }));
      expect((await q.reserve(7, { max: 4 })).map((d) => d.id)).toEqual(['a', 'b', 'd', 'c']);
    });

    it('R4 an omitted id is generated: unique, and the job is published under it', async () => {
      const q = await h.queue();
      const first = await q.publish(0);
      const second = await q.publish(0, { payload: 2 });
      const [third, fourth] = await q.publishBatch(0, [{}, { payload: 4 }]);
      const ids = [first.id, second.id, third?.id, fourth?.id];
      for (const id of ids) expect(typeof id === 'string' && id.length > 0).toBe(true);
      expect(new Set(ids).size).toBe(4);
      expect([first, second, third, fourth].map((r) => r?.duplicate)).toEqual([
        false,
        false,
        false,
        false,
      ]);
      expect(await q.inspect()).toEqual(view(0, { ready: ids as string[] }));
      expect((await q.job(second.id))?.payload).toBe(2);
    });

    it('R4 a generated id is never one a caller gave, nor one a job brought from another queue (R26)', async () => {
      // Ids of the form some engines generate, given by a caller and moved in from another queue.
      const given = ['job-1', 'job-2', 'job-4'];
      const dlqName = h.queueName('dlq');
      const q = await h.engine().queue(dlqName);
      const source = await h.engine().queue(h.queueName('src'), {
        visibility: 5,
        deadLetterQueue: dlqName,
      });
      await source.publish(0, { id: 'job-3' });
      const [delivery] = await source.reserve(0);
      expect(await source.nack(0, delivery?.token as number, { requeue: false })).toBe(true);
      for (const id of given) await q.publish(0, { id });
      const generated = await q.publishBatch(0, [{}, {}, {}, {}, {}, {}]);
      expect(generated.map((result) => result.duplicate)).toEqual(Array(6).fill(false));
      const ids = generated.map((result) => result.id);
      expect(new Set([...ids, ...given, 'job-3']).size).toBe(ids.length + given.length + 1);
      expect((await q.inspect()).ready).toEqual(['job-3', ...given, ...ids]);
    });

    it('R4 a generated id is never that of a job that only came from another queue (R26)', async () => {
      const dlqName = h.queueName('dlq-only');
      const q = await h.engine().queue(dlqName);
      const source = await h.engine().queue(h.queueName('src-only'), { deadLetterQueue: dlqName });
      await source.publish(0, { id: 'job-1' });
      await source.publish(0, { id: 'job-2' });
      for (const delivery of await source.reserve(0, { max: 2 })) {
        await source.nack(0, delivery.token, { requeue: false });
      }
      const generated = await q.publishBatch(0, [{}, {}]);
      expect(generated.map((result) => result.duplicate)).toEqual([false, false]);
      const ids = generated.map((result) => result.id);
      expect(ids.some((id) => id === 'job-1' || id === 'job-2')).toBe(false);
      expect((await q.inspect()).ready).toEqual(['job-1', 'job-2', ...ids]);
    });

    it('R4 a generated id is never one a later job of the same publish gives', async () => {
      for (const options of [{}, { maxLength: 10 }]) {
        const q = await h.queue(options);
        const results = await q.publishBatch(0, [
          { payload: 'generated' },
          { id: 'job-1', payload: 'given' },
          { id: 'job-2', payload: 'given too' },
          { payload: 'generated too' },
        ]);
        expect(results.map((result) => result.duplicate)).toEqual([false, false, false, false]);
        const ids = results.map((result) => result.id);
        expect(ids.slice(1, 3)).toEqual(['job-1', 'job-2']);
        expect(new Set(ids).size).toBe(4);
        expect((await q.inspect()).ready).toEqual(ids);
        expect((await q.job('job-1'))?.payload).toBe('given');
        expect((await q.job('job-2'))?.payload).toBe('given too');
        expect((await q.job(ids[0] as string))?.payload).toBe('generated');
      }
    });

    it('R4 an id whose window ended may be generated again, as the core generates it, whatever was acked before it', async () => {
      const name = h.queueName('generated-window');
      const options = { visibility: 50, dedupWindow: 100 };
      const q = await h.engine().queue(name, options);
      const core = new LeaseQueue(options);
      for (const queue of [q, core]) {
        await queue.publishBatch(0, [{ id: 'x' }, { id: 'job-1' }]);
        const [x, given] = await queue.reserve(0, { max: 2 });
        expect(await queue.ack(1, x?.token as number)).toBe(true);
        // job-1, acked under the lower window, is forgotten at 12 though x is remembered until 101.
        if (queue === core) core.reconfigure({ dedupWindow: 10 });
        else await h.engine().updateQueue(name, { dedupWindow: 10 });
        expect(await queue.ack(2, given?.token as number)).toBe(true);
      }
      const generated = await q.publish(20);
      expect(generated).toEqual(core.publish(20));
      expect(await q.publish(20, { id: 'job-1' })).toEqual(core.publish(20, { id: 'job-1' }));
      expect(await q.inspect()).toEqual(core.inspect());
    });

    it('R4 R24 publishing the id of a job waiting in its group changes nothing: duplicate true, as the core answers', async () => {
      const q = await h.queue();
      const core = new LeaseQueue();
      for (const queue of [q, core]) {
        await queue.publishBatch(0, [
          { id: 'head', group: 'g', payload: 1 },
          { id: 'next', group: 'g', payload: 2 },
        ]);
      }
      expect(await q.inspect()).toMatchObject({ ready: ['head'], waiting: ['next'] });
      const again = [{ id: 'next', group: 'g', payload: 'other' }, { id: 'next' }];
      const answers = await q.publishBatch(1, again);
      expect(answers).toEqual(core.publishBatch(1, again));
      expect(answers.map((answer) => answer.duplicate)).toEqual([true, true]);
      expect(await q.inspect()).toEqual(core.inspect());
      expect((await q.job('next'))?.payload).toBe(2);
    });

    it('R4 publishing an id still present (ready, delayed, active or dead) changes nothing: duplicate true', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'ready', payload: 1 });
      await q.publish(0, { id: 'delayed', payload: 2, delay: 9 });
      await q.publish(0, { id: 'active', payload: 3 });
      await q.publish(0, { id: 'dead', payload: 4 });
      await q.publish(0, { id: 'ready-2', payload: 5 });
      // Reserve 'ready' and 'active' (front first), put 'ready' back, reject 'dead'.
      await q.reserve(1, { max: 3 }); // tokens 1 ready, 2 active, 3 dead
      await q.nack(1, 1);
      await q.nack(1, 3, { requeue: false });
      const before = await q.inspect();
      expect(before).toEqual(
        view(1, {
          ready: ['ready', 'ready-2'],
          delayed: [{ id: 'delayed', availableAt: 9 }],
          active: [{ token: 2, id: 'active', deadline: 6, deliveryCount: 1 }],
          dead: [{ id: 'dead', reason: 'rejected', deliveryCount: 1 }],
        }),
      );
      for (const id of ['ready', 'delayed', 'active', 'dead']) {
        expect(await q.publish(1, { id, payload: 'other', delay: 3 })).toEqual({
          id,
          duplicate: true,
        });
      }
      expect(await q.publishBatch(1, [{ id: 'ready' }, { id: 'new' }, { id: 'new' }])).toEqual([
        { id: 'ready', duplicate: true },
        { id: 'new', duplicate: false },
        { id: 'new', duplicate: true },
      ]);
      expect(await q.inspect()).toEqual({ ...before, ready: ['ready', 'ready-2', 'new'] });
      expect((await q.job('ready'))?.payload).toBe(1);
      expect((await q.job('dead'))?.payload).toBe(4);
      expect(await q.stats(1)).toMatchObject({ published: 6, duplicates: 6 });
    });

    it('R4 an acked id is forgotten at once by default: publishing it again is a new job', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'a', payload: 1 });
      await q.reserve(0);
      expect(await q.ack(1, 1)).toBe(true);
      expect(await q.publish(1, { id: 'a', payload: 2 })).toEqual({ id: 'a', duplicate: false });
      expect(await q.job('a')).toEqual({
        id: 'a',
        payload: 2,
        state: 'ready',
        deliveryCount: 0,
        publishedAt: 1,
        history: [],
      });
    });

    it('R4 with dedupWindow, an acked id is refused as a duplicate until ack time + window', async () => {
      const q = await h.queue({ visibility: 5, dedupWindow: 10 });
      await q.publish(0, { id: 'a' });
      await q.reserve(0);
      expect(await q.ack(3, 1)).toBe(true);
      expect(await q.publish(3, { id: 'a' })).toEqual({ id: 'a', duplicate: true });
      expect(await q.publish(12, { id: 'a' })).toEqual({ id: 'a', duplicate: true });
      expect(await q.inspect()).toEqual(view(12));
      expect(await q.publish(13, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
      expect(await q.inspect()).toEqual(view(13, { ready: ['a'] }));
    });

    it('R4 an acked id is remembered for the window in force at its ack: updateQueue changes it for later acks', async () => {
      const name = h.queueName('window');
      const q = await h.engine().queue(name, { visibility: 5, dedupWindow: 100 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await q.reserve(0, { max: 2 });
      expect(await q.ack(1, 1)).toBe(true);
      await h.engine().updateQueue(name, { dedupWindow: 10 });
      expect(await q.ack(2, 2)).toBe(true);
      // b, acked under the lower window, is forgotten at 12 though a, acked before it, is not.
      expect(await q.publish(11, { id: 'b' })).toEqual({ id: 'b', duplicate: true });
      expect(await q.publish(12, { id: 'b' })).toEqual({ id: 'b', duplicate: false });
      expect(await q.publish(12, { id: 'a' })).toEqual({ id: 'a', duplicate: true });
      expect(await q.publish(101, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
      expect(await q.inspect()).toEqual(view(101, { ready: ['b', 'a'] }));
    });

    it('R4 payloads are opaque JSON: every delivery, job() and deadLetters() return them exactly', async () => {
      const q = await h.queue({ visibility: 5 });
      const inputs = PAYLOADS.map((payload, index) => ({ id: `p${index}`, payload }));
      await q.publishBatch(0, inputs);
      await q.publish(0, { id: 'none' });
      const deliveries = await q.reserve(0, { max: inputs.length + 1 });
      expect(deliveries.map((d) => d.payload)).toEqual([...PAYLOADS, undefined]);
      expect(deliveries.map((d) => d.id)).toEqual([...inputs.map((i) => i.id), 'none']);
      for (const input of inputs) expect((await q.job(input.id))?.payload).toEqual(input.payload);
      expect((await q.job('none'))?.payload).toBeUndefined();
      for (const d of deliveries) await q.reject(1, d.token, { requeue: false });
      expect((await q.deadLetters()).map((dead) => dead.payload)).toEqual([...PAYLOADS, undefined]);
    });

    it('R4 a payload is stored as it was when publish was called: changing it before the answer changes nothing', async (context) => {
      // The remote client writes its request's JSON after the tick of the call (calls of one
      // tick travel together): what it sends is the payload as it is then.
      if (h.viaClient) return context.skip();
      const q = await h.queue({ visibility: 5 });
      const one = { n: 1, list: [1] };
      const many = [{ n: 1 }, { n: 1 }];
      const published = Promise.all([
        q.publish(0, { id: 'one', payload: one }),
        q.publishBatch(0, [
          { id: 'a', payload: many[0] },
          { id: 'b', payload: many[1] },
        ]),
      ]);
      one.n = 2;
      one.list.push(2);
      for (const payload of many) payload.n = 2;
      await published;
      const deliveries = await q.reserve(0, { max: 3 });
      expect(deliveries.map((d) => [d.id, d.payload])).toEqual([
        ['one', { n: 1, list: [1] }],
        ['a', { n: 1 }],
        ['b', { n: 1 }],
      ]);
    });
  });

  describe('R4 a payload that is not JSON', () => {
    it('R4 a payload whose toJSON throws something that is not an Error is refused with a ValidationError that says what was thrown', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'a' });
      const thrown: [unknown, RegExp][] = [
        [null, /payload is not JSON: null was thrown/],
        [undefined, /payload is not JSON: undefined was thrown/],
        ['no payload today', /payload is not JSON: "no payload today" was thrown/],
        [Object.create(null), /payload is not JSON: object was thrown/],
      ];
      for (const [value, message] of thrown) {
        const payload = {
          toJSON: () => {
            throw value;
          },
        };
        const alone = await expectRefusedUnchanged(
          q,
          () => q.publish(1, { id: 'b', payload }),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        expect(alone.message).toMatch(message);
        const inBatch = await expectRefusedUnchanged(
          q,
          () => q.publishBatch(1, [{ id: 'c' }, { id: 'd', payload }]),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        expect(inBatch.message).toMatch(/^jobs\[1\]\.payload is not JSON: /);
      }
      expect(await q.inspect()).toEqual(view(0, { ready: ['a'] }));
    });
  });

  describe('R5 commit', () => {
    it('R5 a publish that returned is committed: later changes to the caller’s objects do not reach the queue', async () => {
      const q = await h.queue({ visibility: 5 });
      const payload = { n: 1, list: [1] };
      const batch = [{ id: 'b', payload: { n: 10 } }];
      await q.publish(0, { id: 'a', payload });
      await q.publishBatch(0, batch);
      payload.n = 2;
      payload.list.push(2);
      (batch[0] as { payload: { n: number } }).payload.n = 20;
      const [a, b] = await q.reserve(0, { max: 2 });
      expect(a?.payload).toEqual({ n: 1, list: [1] });
      expect(b?.payload).toEqual({ n: 10 });
      // A consumer changing what it was handed does not change the job either.
      (a?.payload as { n: number }).n = 3;
      expect((await q.job('a'))?.payload).toEqual({ n: 1, list: [1] });
      await q.nack(1, 1);
      expect((await q.reserve(1))[0]?.payload).toEqual({ n: 1, list: [1] });
    });

    it('R5 publishBatch is all-or-nothing: one bad entry refuses the whole batch, nothing changes', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'a' });
      const bad: [string, unknown][] = [
        ['an empty id', { id: '' }],
        ['an id of 257 characters', { id: 'x'.repeat(257) }],
        ['a numeric id', { id: 7 }],
        ['a negative delay', { delay: -1 }],
        ['a fractional delay', { delay: 1.5 }],
        ['a string delay', { delay: '3' }],
        ['null', null],
        ['a string', 'job'],
        ['an array', []],
      ];
      for (const [, entry] of bad) {
        await expectRefusedUnchanged(
          q,
          () => q.publishBatch(3, [{ id: 'ok-1' }, entry as object, { id: 'ok-2' }]),
          ValidationError,
          'INVALID_ARGUMENT',
        );
      }
      expect(await q.inspect()).toEqual(view(0, { ready: ['a'] }));
    });

    it('R5 publishBatch publishes every entry in order at one tick and returns one result each', async () => {
      const q = await h.queue();
      expect(
        await q.publishBatch(4, [{ id: 'x' }, { id: 'y', delay: 2 }, { id: 'z', payload: 'z' }]),
      ).toEqual([
        { id: 'x', duplicate: false },
        { id: 'y', duplicate: false },
        { id: 'z', duplicate: false },
      ]);
      expect(await q.inspect()).toEqual(
        view(4, { ready: ['x', 'z'], delayed: [{ id: 'y', availableAt: 6 }] }),
      );
      expect(await q.publishBatch(5, [])).toEqual([]);
      expect(await q.queueTime()).toBe(5);
    });
  });
});
