import { describe, expect, it } from 'vitest';
import type { PublishInput } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { BULK_STEP, MOVE_CHUNK, STEP_RENUMBER_BOUND } from '../../src/engine/sql/bulk-steps.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/**
 * R14, R26: a redrive, purge or moveJobs alone in its call takes steps on the SQL engines, each
 * a transaction of its own (BULK_STEP, MOVE_CHUNK jobs), so that the engine's other calls, and
 * on SQLite the whole process, go on between them. Where a step boundary falls must not show in
 * the outcome, on any engine; on the SQL engines, calls made meanwhile run between the steps.
 */
const C = BULK_STEP;

const ids = (prefix: string, from: number, to: number): string[] =>
  Array.from({ length: to - from }, (_, n) => `${prefix}${from + n}`);

/** Publishes in batches a server takes (its maxBatch, 100 by default). */
async function publishAll(queue: QueueHandle, now: number, jobs: PublishInput[]): Promise<void> {
  for (let start = 0; start < jobs.length; start += 100) {
    await queue.publishBatch(now, jobs.slice(start, start + 100));
  }
}

/**
 * Reserves up to `count` ready jobs (all when absent) in one session and rejects them: they die
 * in the order they were ready. Answers their ids.
 */
async function kill(queue: QueueHandle, now: number, count = Number.POSITIVE_INFINITY) {
  const session = await queue.openSession(now);
  const taken: { id: string; token: number }[] = [];
  while (taken.length < count) {
    const batch = await queue.reserve(now, { max: Math.min(100, count - taken.length), session });
    if (batch.length === 0) break;
    taken.push(...batch);
  }
  const last = taken.at(-1);
  if (last !== undefined) {
    await queue.nackUpTo(now, session, last.token, { requeue: false });
  }
  await queue.closeSession(now, session);
  return taken.map((delivery) => delivery.id);
}

/** Dead jobs `prefix0`, `prefix1`, … in that order. */
async function deadJobs(queue: QueueHandle, now: number, prefix: string, count: number) {
  const dead = ids(prefix, 0, count);
  await publishAll(
    queue,
    now,
    dead.map((id) => ({ id })),
  );
  expect(await kill(queue, now)).toEqual(dead);
  return dead;
}

describeEngines(engines, (h) => {
  /** Steps run apart from other calls only where the storage is SQL, not over a client. */
  const steps = () => (h.name === 'sqlite' || h.name === 'postgres') && !h.viaClient;

  describe('R14 redrive and purge past one step', () => {
    it('R14 R24 redrive of all past one step brings every dead job back in the order they died, a group rejoining in its order', async () => {
      const q = await h.queue();
      const a = ids('a', 0, C - 1);
      const b = ids('b', 0, 10);
      await publishAll(q, 0, [
        ...a.map((id) => ({ id })),
        { id: 'g0', group: 'g' },
        { id: 'g1', group: 'g' },
        ...b.map((id) => ({ id })),
      ]);
      // The first C die (g0 last of them, so its group goes on), then b's and g1.
      expect(await kill(q, 0, C)).toEqual([...a, 'g0']);
      expect(await kill(q, 0)).toEqual([...b, 'g1']);
      expect(await q.redrive(1)).toBe(C + b.length + 1);
      // g0 came back in the first step; g1, in the next, joined its group behind it.
      expect(await q.inspect()).toMatchObject({ ready: [...a, 'g0', ...b], waiting: ['g1'] });
      expect(await q.stats(1)).toMatchObject({
        ready: C + b.length,
        waiting: 1,
        dead: 0,
        redriven: C + b.length + 1,
      });
      const taken = await q.reserve(1, { max: 100 });
      expect(taken.map((delivery) => delivery.id)).toEqual(a.slice(0, 100));
      expect(taken.every((delivery) => delivery.deliveryCount === 1)).toBe(true);
    });

    it('R14 purge of all past one step removes every dead job and frees their ids', async () => {
      const q = await h.queue();
      const dead = await deadJobs(q, 0, 'd', C + 5);
      await q.publish(0, { id: 'live' });
      expect(await q.purge(1)).toBe(C + 5);
      expect(await q.stats(1)).toMatchObject({ dead: 0, ready: 1, purged: C + 5 });
      expect(await q.publish(1, { id: dead[C] as string })).toMatchObject({ duplicate: false });
    });

    it('R14 redrive and purge of more ids than one step takes, each id once, in the order named', async (context) => {
      // A server takes at most maxBatch ids a call.
      if (h.viaClient) return context.skip();
      const q = await h.queue();
      const dead = await deadJobs(q, 0, 'd', C + 10);
      const named = [...dead.slice(0, C + 5)].reverse();
      expect(await q.redrive(1, [...named, named[0] as string, 'absent', named[3] as string])).toBe(
        C + 5,
      );
      expect((await q.inspect()).ready).toEqual(named);
      // Those redriven are no longer dead: only the five left go.
      expect(await q.purge(1, [...dead.slice(0, C), ...dead.slice(C + 5)])).toBe(5);
      expect(await q.stats(1)).toMatchObject({
        ready: C + 5,
        dead: 0,
        redriven: C + 5,
        purged: 5,
      });
    });
  });

  describe('R26 moveJobs where more jobs stay than a step renumbers', () => {
    it('R26 moveJobs past many chunks keeps the order of the jobs that stay and of those that move', async () => {
      const from = await h.queue();
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      // Every other job is already in the target and stays: its gaps are closed from the head.
      const stays = STEP_RENUMBER_BOUND + MOVE_CHUNK / 2;
      const all = ids('j', 0, 2 * stays);
      const kept = all.filter((_, n) => n % 2 === 0);
      const moved = all.filter((_, n) => n % 2 === 1);
      await publishAll(
        to,
        0,
        kept.map((id) => ({ id })),
      );
      await publishAll(
        from,
        0,
        all.map((id) => ({ id })),
      );
      expect(await from.moveJobs(1, { to: toName })).toBe(moved.length);
      expect((await from.inspect()).ready).toEqual(kept);
      expect((await to.inspect()).ready).toEqual([...kept, ...moved]);
      expect(await from.stats(1)).toMatchObject({ ready: kept.length });
      const taken = await from.reserve(1, { max: 100 });
      expect(taken.map((delivery) => delivery.id)).toEqual(kept.slice(0, 100));
      // The band is whole again: a job published now is the back of it.
      await from.publish(1, { id: 'last' });
      expect((await from.inspect()).ready.at(-1)).toBe('last');
      expect(await from.stats(1)).toMatchObject({ ready: kept.length - 100 + 1 });
    });
  });

  describe('R14 R26 steps of a bulk command on the SQL engines', () => {
    /**
     * Runs `command` while a count of its queue (`count`) is polled: the polls and a publish to
     * another queue, made as the command begins, are answered between its steps, seeing it part
     * done. Answers the command's result.
     */
    async function between(
      command: () => Promise<number>,
      count: () => Promise<number>,
      total: number,
    ): Promise<number> {
      const other = await h.queue();
      let done = false;
      const running = command().finally(() => {
        done = true;
      });
      let otherFirst = false;
      const published = other.publish(5, { id: 'elsewhere' }).then(() => {
        otherFirst = !done;
      });
      const seen: number[] = [];
      while (!done) seen.push(await count());
      await published;
      expect(otherFirst).toBe(true);
      expect(seen.some((value) => value > 0 && value < total)).toBe(true);
      return running;
    }

    it('R14 a redrive of all runs in steps that calls made meanwhile come between', async (context) => {
      if (!steps()) return context.skip();
      const q = await h.queue();
      const n = 3 * C + 10;
      await deadJobs(q, 0, 'd', n);
      const redriven = await between(
        () => q.redrive(5),
        async () => (await q.stats(5)).dead,
        n,
      );
      expect(redriven).toBe(n);
      expect(await q.stats(5)).toMatchObject({ ready: n, dead: 0, redriven: n });
    });

    it('R14 a purge of all runs in steps that calls made meanwhile come between', async (context) => {
      if (!steps()) return context.skip();
      const q = await h.queue();
      const n = 3 * C + 10;
      await deadJobs(q, 0, 'd', n);
      const purged = await between(
        () => q.purge(5),
        async () => (await q.stats(5)).dead,
        n,
      );
      expect(purged).toBe(n);
      expect(await q.stats(5)).toMatchObject({ dead: 0, purged: n });
    });

    it('R26 a moveJobs of all runs in steps that calls made meanwhile come between', async (context) => {
      if (!steps()) return context.skip();
      const from = await h.queue();
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      const all = ids('j', 0, 3 * MOVE_CHUNK + 10);
      await publishAll(
        from,
        0,
        all.map((id) => ({ id })),
      );
      const moved = await between(
        () => from.moveJobs(5, { to: toName }),
        async () => (await from.stats(5)).ready,
        all.length,
      );
      expect(moved).toBe(all.length);
      expect((await to.inspect()).ready).toEqual(all);
    });

    it('R14 jobs that die again while a redrive of all runs are not redriven again', async (context) => {
      if (!steps()) return context.skip();
      const q = await h.queue({ maxDeliveries: 1 });
      const n = 2 * C + 10;
      await deadJobs(q, 0, 'd', n);
      let done = false;
      const running = q.redrive(5).finally(() => {
        done = true;
      });
      let rejected = 0;
      while (!done) {
        for (const delivery of await q.reserve(5, { max: 100 })) {
          if (await q.nack(5, delivery.token, { requeue: false })) rejected += 1;
        }
      }
      expect(await running).toBe(n);
      expect(rejected).toBeGreaterThan(0);
      const stats = await q.stats(5);
      expect(stats).toMatchObject({ redriven: n, dead: rejected, ready: n - rejected });
    });

    it('R26 jobs a consumer takes between the steps of a move stay with it, and every other job moves once', async (context) => {
      if (!steps()) return context.skip();
      const from = await h.queue();
      const toName = h.queueName('to');
      const to = await h.engine().queue(toName);
      const all = ids('j', 0, 3 * MOVE_CHUNK + 10);
      await publishAll(
        from,
        0,
        all.map((id) => ({ id })),
      );
      let done = false;
      const running = from.moveJobs(5, { to: toName }).finally(() => {
        done = true;
      });
      const acked: string[] = [];
      while (!done) {
        const taken = await from.reserve(5, { max: 100 });
        const answers = await from.ackMany(
          5,
          taken.map((delivery) => delivery.token),
        );
        expect(answers.every(Boolean)).toBe(true);
        acked.push(...taken.map((delivery) => delivery.id));
      }
      const moved = await running;
      expect(acked.length).toBeGreaterThan(0);
      const arrived = (await to.inspect()).ready;
      expect(moved).toBe(arrived.length);
      // Each job once: acked from the source, or moved, in the order it stood there.
      expect([...arrived, ...acked].sort()).toEqual([...all].sort());
      expect(arrived).toEqual(all.filter((id) => !acked.includes(id)));
      expect(await from.stats(5)).toMatchObject({ ready: 0, active: 0 });
    });
  });
});
