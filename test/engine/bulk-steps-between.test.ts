import { afterEach, describe, expect, it, vi } from 'vitest';
import { ClosedError, type PublishInput } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { BULK_STEP, MOVE_CHUNK } from '../../src/engine/sql/bulk-steps.js';
import { useConformanceEngines } from '../conformance/engines.js';
import { describeEngines, type EngineHarness } from '../conformance/suite.js';
import { beforeStep } from './between-steps.js';

/**
 * R14, R20, R26: a redrive, purge or moveJobs alone in its call takes steps on the SQL engines,
 * each a transaction of its own, and other calls run between them: a step ends the call where
 * its queue was deleted (and maybe made again) since the step before, and an error that ends
 * the call after some steps says how many jobs those steps took.
 */
const engines = (await useConformanceEngines({ client: false })).filter(
  (engine) => engine.name !== 'memory',
);

afterEach(() => {
  vi.restoreAllMocks();
});

const ids = (prefix: string, count: number): string[] =>
  Array.from({ length: count }, (_, n) => `${prefix}${n}`);

async function publishAll(queue: QueueHandle, now: number, jobs: PublishInput[]): Promise<void> {
  for (let start = 0; start < jobs.length; start += 500) {
    await queue.publishBatch(now, jobs.slice(start, start + 500));
  }
}

/** Jobs `prefix0`, `prefix1`, … dead in that order (rejected in one session). */
async function deadJobs(queue: QueueHandle, now: number, prefix: string, count: number) {
  const dead = ids(prefix, count);
  await publishAll(
    queue,
    now,
    dead.map((id) => ({ id })),
  );
  const session = await queue.openSession(now);
  let last: number | undefined;
  for (;;) {
    const taken = await queue.reserve(now, { max: 500, session });
    if (taken.length === 0) break;
    last = taken.at(-1)?.token;
  }
  if (last !== undefined) await queue.nackUpTo(now, session, last, { requeue: false });
  await queue.closeSession(now, session);
  expect((await queue.stats(now)).dead).toBe(count);
  return dead;
}

describeEngines(engines, (h: EngineHarness) => {
  /** Deletes queue `name` and makes it again, with `dead` dead jobs and `ready` ready ones. */
  async function makeAgain(name: string, dead: number, ready: number): Promise<QueueHandle> {
    expect(await h.engine().deleteQueue(name)).toBe(true);
    const again = await h.engine().queue(name);
    await deadJobs(again, 5, 'new', dead);
    await publishAll(
      again,
      5,
      ids('fresh', ready).map((id) => ({ id })),
    );
    return again;
  }

  describe('R14 R20 a queue deleted between the steps of a call', () => {
    it('R14 R20 a purge of all ends where its queue was made again, the new dead jobs kept', async () => {
      const q = await h.queue();
      await deadJobs(q, 1, 'old', 2 * BULK_STEP + 500);
      let again: QueueHandle | undefined;
      beforeStep(2, async () => {
        again = await makeAgain(q.name, 50, 0);
      });
      expect(await q.purge(5)).toBe(BULK_STEP);
      expect((await again?.deadLetters())?.map((dead) => dead.id)).toEqual(ids('new', 50));
      expect(await again?.stats(5)).toMatchObject({ dead: 50, purged: 0 });
    });

    it('R14 R20 a redrive of all ends where its queue was made again, the new dead jobs kept', async () => {
      const q = await h.queue();
      await deadJobs(q, 1, 'old', 2 * BULK_STEP + 500);
      let again: QueueHandle | undefined;
      beforeStep(2, async () => {
        again = await makeAgain(q.name, 50, 0);
      });
      expect(await q.redrive(5)).toBe(BULK_STEP);
      expect(await again?.stats(5)).toMatchObject({ dead: 50, ready: 0, redriven: 0 });
    });

    it('R14 R20 a purge of ids named ends where its queue was made again with jobs of those ids', async () => {
      const q = await h.queue();
      // Named last to first: the ids the new queue's dead jobs have come in the third step.
      const named = (await deadJobs(q, 1, 'new', 2 * BULK_STEP + 500)).reverse();
      let again: QueueHandle | undefined;
      beforeStep(2, async () => {
        again = await makeAgain(q.name, 50, 0);
      });
      expect(await q.purge(5, named)).toBe(BULK_STEP);
      expect(await again?.stats(5)).toMatchObject({ dead: 50, purged: 0 });
    });

    it('R26 R20 a moveJobs of all ends where its queue was made again, the new jobs kept', async () => {
      const q = await h.queue();
      const to = await h.engine().queue(h.queueName('to'));
      await publishAll(
        q,
        1,
        ids('old', 2 * MOVE_CHUNK + 500).map((id) => ({ id })),
      );
      let again: QueueHandle | undefined;
      beforeStep(2, async () => {
        again = await makeAgain(q.name, 0, 50);
      });
      expect(await q.moveJobs(5, { to: to.name })).toBe(MOVE_CHUNK);
      expect((await again?.inspect())?.ready).toEqual(ids('fresh', 50));
      expect(await to.stats(5)).toMatchObject({ ready: MOVE_CHUNK });
    });

    it('R14 R20 a purge of all whose queue is deleted between steps answers what its steps did', async () => {
      const q = await h.queue();
      await deadJobs(q, 1, 'old', 2 * BULK_STEP + 500);
      beforeStep(2, async () => {
        expect(await h.engine().deleteQueue(q.name)).toBe(true);
      });
      expect(await q.purge(5)).toBe(BULK_STEP);
      expect((await h.engine().listQueues()).map((queue) => queue.name)).not.toContain(q.name);
    });
  });

  describe('R20 an error that ends a call after some of its steps', () => {
    const commands = [
      ['purge', (q: QueueHandle) => q.purge(5)],
      ['redrive', (q: QueueHandle) => q.redrive(5)],
    ] as const;

    for (const [label, command] of commands) {
      it(`R14 R20 a ${label} of all cut by the engine closing carries how many jobs its steps took`, async () => {
        const q = await h.queue();
        await deadJobs(q, 1, 'd', 2 * BULK_STEP + 500);
        beforeStep(3, () => h.close());
        const error = await command(q).then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error).toBeInstanceOf(ClosedError);
        expect(error).toMatchObject({ code: 'CLOSED', doneCount: 2 * BULK_STEP });
        const reopened = await h.reopen();
        const stats = await (await reopened.queue(q.name)).stats(5);
        expect(stats.dead).toBe(500);
      });
    }

    it('R26 R20 a moveJobs cut by the engine closing carries how many jobs its steps moved', async () => {
      const q = await h.queue();
      const toName = h.queueName('to');
      await h.engine().queue(toName);
      await publishAll(
        q,
        1,
        ids('j', 2 * MOVE_CHUNK + 500).map((id) => ({ id })),
      );
      beforeStep(2, () => h.close());
      const error = await q.moveJobs(5, { to: toName }).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(ClosedError);
      expect(error).toMatchObject({ doneCount: MOVE_CHUNK });
      const reopened = await h.reopen();
      expect(await (await reopened.queue(toName)).stats(5)).toMatchObject({ ready: MOVE_CHUNK });
    });

    it('R20 the error of a call refused at its first step carries a count of none', async () => {
      const q = await h.queue();
      await deadJobs(q, 5, 'd', 10);
      const error = await q.purge(4).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toMatchObject({ code: 'INVALID_CLOCK', doneCount: 0 });
      expect((await q.stats(5)).dead).toBe(10);
    });
  });

  describe('R26 R20 what a stepped moveJobs finds between its steps', () => {
    it('R26 delayed jobs that come due between steps, after their band was read, still move', async () => {
      const q = await h.queue();
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      const ready = ids('r', 500);
      // Delayed ones of the band read first, and of a priority no ready job had when it began.
      const delayed = ids('d', 2 * MOVE_CHUNK);
      await publishAll(q, 1, [
        ...ready.map((id) => ({ id })),
        ...delayed.map((id, n) => ({ id, delay: 100, priority: n % 2 === 0 ? 0 : 3 })),
      ]);
      // After the first step (the ready jobs and 500 delayed ones), the rest come due.
      beforeStep(2, async () => {
        expect(await q.stats(200)).toMatchObject({ ready: 1500, delayed: 0 });
      });
      expect(await q.moveJobs(5, { to: toName })).toBe(ready.length + delayed.length);
      expect(await q.stats(200)).toMatchObject({ ready: 0, delayed: 0 });
      // As one step would have moved them: each band in the order the jobs stood or came due.
      const odd = delayed.filter((_, n) => n % 2 === 1);
      const even = delayed.filter((_, n) => n % 2 === 0);
      expect((await to.inspect()).ready).toEqual([...odd, ...ready, ...even]);
    });

    it('R26 R24 a member published into a moving group between steps stays, its group gone on', async () => {
      const q = await h.queue();
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      const before = ids('a', MOVE_CHUNK);
      await publishAll(q, 1, [...before.map((id) => ({ id })), { id: 'g0', group: 'g' }]);
      beforeStep(2, async () => {
        await q.publish(5, { id: 'g1', group: 'g' });
        expect(await q.inspect()).toMatchObject({ ready: ['g0'], waiting: ['g1'] });
      });
      expect(await q.moveJobs(5, { to: toName })).toBe(MOVE_CHUNK + 1);
      expect((await to.inspect()).ready).toEqual([...before, 'g0']);
      const left = await q.inspect();
      expect(left.ready).toEqual(['g1']);
      expect(left.waiting ?? []).toEqual([]);
    });
  });
});
