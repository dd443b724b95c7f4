import { afterAll, describe, expect, it, vi } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { NotFoundError, QueueFullError, ValidationError } from '../../src/core/index.js';
import { openEngine } from '../../src/engine/index.js';
import { type ScratchDatabase, scratchDatabase } from '../engine/postgres-scratch.js';
import { type EngineUnderTest, useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

/**
 * PostgreSQL in a database of these tests' own, made at the first open and dropped after the
 * file. A scheduler's pass reads the schedules of every queue of its storage and publishes each
 * one due by its clock: in the database other test files share, their schedulers, whose clocks
 * are elsewhere, would publish (and record) occurrences of these tests' schedules, and a pass
 * here would publish theirs.
 */
function inOwnDatabase(underTest: EngineUnderTest): EngineUnderTest {
  if (underTest.name !== 'postgres' || underTest.skipReason !== undefined) return underTest;
  let scratch: Promise<ScratchDatabase> | undefined;
  afterAll(async () => {
    if (scratch !== undefined) await (await scratch).drop();
  });
  return {
    ...underTest,
    factory: {
      name: 'postgres',
      open: async () => {
        scratch ??= scratchDatabase('schedules');
        return openEngine((await scratch).url());
      },
      cleanup: async () => {},
    },
  };
}

const engines = (await useConformanceEngines()).map(inOwnDatabase);

/** The longest a test waits for a scheduler's pass (real time: a loaded machine is slow). */
const PASS_WAIT = { timeout: 10_000 };

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 30, 8, 30);

describeEngines(engines, (h) => {
  describe('R25 periodic jobs', () => {
    it('R25 a schedule is stored in the engine: set, listed, replaced, removed, and deleted with its queue', async () => {
      const name = h.queueName('sched');
      const broker = new EngineBroker(h.engine(), { clock: new ManualClock(T0) });
      const q = await broker.queue(name);
      expect(await q.schedule('hourly', '0 * * * *', { payload: { n: 1 } })).toEqual({
        name: 'hourly',
        queue: name,
        cron: '0 * * * *',
        payload: { n: 1 },
        createdAt: T0,
        nextAt: T0 + HOUR / 2,
      });
      await q.schedule('often', 5000);
      expect((await q.schedules()).map((s) => [s.name, s.every ?? s.cron])).toEqual([
        ['hourly', '0 * * * *'],
        ['often', 5000],
      ]);
      await expect(q.schedule('bad', 'not cron')).rejects.toBeInstanceOf(ValidationError);
      await expect(q.schedule('tz', '0 9 * * *', { timezone: 'Mars/Olympus' })).rejects.toThrow(
        /timezone/,
      );
      await expect(q.schedule('fast', 10)).rejects.toThrow(/at least 1000/);
      // Parsed, but never firing: refused rather than stored to fire never.
      await expect(q.schedule('never', '0 0 31 2 *')).rejects.toThrow(/never fire/);
      await expect(q.schedule('year', '0 0 3 * * * 2030')).rejects.toThrow(/5 or 6 fields, got 7/);
      await expect(q.schedule('nick', '@hourly')).rejects.toThrow(/5 or 6 fields, got 1/);
      // One message for a wrong count, not the cron parser's as well (which takes 7 fields).
      const words = await q
        .schedule('words', 'not a cron')
        .catch((error: ValidationError) => error);
      expect((words as ValidationError).issues).toEqual([
        'cron "not a cron" must have 5 or 6 fields, got 3',
      ]);
      await expect(q.schedule('fields', '61 * * * *')).rejects.toThrow(/not a cron expression/);
      await expect(q.schedule('far', Number.MAX_SAFE_INTEGER)).rejects.toThrow(
        new RegExp(`every must be at most ${8.64e15 - T0} ms`),
      );
      await q.schedule('farthest', 8.64e15 - T0);
      expect((await q.schedules()).find((s) => s.name === 'farthest')?.nextAt).toBe(8.64e15);
      expect(await q.removeSchedule('farthest')).toBe(true);
      expect(await q.removeSchedule('often')).toBe(true);
      expect(await q.removeSchedule('often')).toBe(false);
      expect((await h.engine().listSchedules(name)).map((s) => s.name)).toEqual(['hourly']);
      await h.engine().deleteQueue(name);
      expect(await h.engine().listSchedules(name)).toEqual([]);
    });

    it('R25 a schedule set again with the same definition stays as it was: its phase, a due occurrence and the last one published kept', async () => {
      const name = h.deleteAfter(h.queueName('sched'));
      const clock = new ManualClock(T0);
      const broker = new EngineBroker(h.engine(), { clock });
      const q = await broker.queue(name);
      const ofQueue = async (pass: Promise<{ queue: string; at: number }[]>) =>
        (await pass).filter((occurrence) => occurrence.queue === name);
      await q.schedule('pulse', 10_000, { payload: { v: 1 } });
      clock.set(T0 + 8_000);
      // As a deploy that sets its schedules at every start: the phase does not move.
      expect(await q.schedule('pulse', 10_000, { payload: { v: 1 } })).toMatchObject({
        createdAt: T0,
        nextAt: T0 + 10_000,
      });
      clock.set(T0 + 10_000);
      await q.schedule('pulse', 10_000, { payload: { v: 1 } });
      const scheduler = broker.scheduler();
      expect(await ofQueue(scheduler.runOnce())).toMatchObject([{ at: T0 + 10_000 }]);
      await q.schedule('pulse', 10_000, { payload: { v: 1 } });
      expect(await ofQueue(scheduler.runOnce())).toEqual([]);
      expect((await q.schedules())[0]).toMatchObject({ createdAt: T0, lastAt: T0 + 10_000 });
      // Another definition (here its payload) replaces it: its occurrences count from now.
      clock.set(T0 + 12_000);
      expect(await q.schedule('pulse', 10_000, { payload: { v: 2 } })).toMatchObject({
        createdAt: T0 + 12_000,
        nextAt: T0 + 22_000,
      });
      expect((await q.schedules())[0]).toMatchObject({ lastAt: T0 + 10_000 });
    });

    it('R25 a schedule whose payload is nested thousands of levels deep, set again with it (its keys in another order), stays as it was', async (context) => {
      // Over a server a payload is nested at most its maxJsonDepth levels: the client refuses more.
      if (h.viaClient) return context.skip();
      const name = h.deleteAfter(h.queueName('sched'));
      const clock = new ManualClock(T0);
      const broker = new EngineBroker(h.engine(), { clock });
      const q = await broker.queue(name);
      // Deep, but well within what JSON.stringify (and so a publish) takes here.
      const depth = Math.floor(deepestJson() * 0.85);
      await q.schedule('deep', 10_000, { payload: nestedArrays(depth, { a: 1, b: 2 }) });
      clock.set(T0 + 8_000);
      expect(
        await q.schedule('deep', 10_000, { payload: nestedArrays(depth, { b: 2, a: 1 }) }),
      ).toMatchObject({ createdAt: T0, nextAt: T0 + 10_000 });
      clock.set(T0 + 10_000);
      expect(await broker.scheduler().runOnce()).toHaveLength(1);
      const [job] = await q.receive();
      expect(JSON.stringify(job?.payload)).toBe(
        JSON.stringify(nestedArrays(depth, { a: 1, b: 2 })),
      );
    });

    it('R25 a schedule of a queue that does not exist (deleted by another handle) is refused with NotFoundError and stores nothing', async () => {
      const name = h.queueName('sched');
      const broker = new EngineBroker(h.engine(), { clock: new ManualClock(T0) });
      const q = await broker.queue(name);
      await h.engine().deleteQueue(name);
      await expect(q.schedule('tick', 1000)).rejects.toBeInstanceOf(NotFoundError);
      expect(await h.engine().listSchedules(name)).toEqual([]);
    });

    it('R25 a schedule keeps a copy of its payload, JSON as a publish takes it; another is refused and stores nothing', async () => {
      const name = h.deleteAfter(h.queueName('sched'));
      const clock = new ManualClock(T0);
      const broker = new EngineBroker(h.engine(), { clock });
      const q = await broker.queue(name);
      const payload = { n: 1 };
      await q.schedule('tick', 1000, { payload });
      payload.n = 2;
      const [listed] = await q.schedules();
      (listed?.payload as { n: number }).n = 3;
      expect((await q.schedules())[0]?.payload).toEqual({ n: 1 });
      for (const bad of [() => 1, 10n, { n: 10n }]) {
        await expect(q.schedule('bad', 1000, { payload: bad })).rejects.toBeInstanceOf(
          ValidationError,
        );
      }
      expect((await q.schedules()).map((schedule) => schedule.name)).toEqual(['tick']);
      clock.set(T0 + 1000);
      expect(await broker.scheduler().runOnce()).toHaveLength(1);
      expect((await q.receive())[0]?.payload).toEqual({ n: 1 });
    });

    it('R25 each occurrence is published once, with its time in its id, even by several schedulers', async () => {
      const name = h.deleteAfter(h.queueName('sched'));
      const clock = new ManualClock(T0);
      const broker = new EngineBroker(h.engine(), { clock });
      const q = await broker.queue(name);
      await q.schedule('hourly', '0 * * * *', { payload: 'tick' });
      const first = broker.scheduler();
      const second = new EngineBroker(h.engine(), { clock }).scheduler();
      expect(await first.runOnce()).toEqual([]);
      clock.set(T0 + HOUR / 2);
      const [published] = await first.runOnce();
      expect(published).toEqual({
        queue: name,
        name: 'hourly',
        at: T0 + HOUR / 2,
        id: 'hourly@2026-11-30T09:00:00.000Z',
        duplicate: false,
      });
      expect(await second.runOnce()).toEqual([]);
      const [job] = await q.receive();
      expect(job).toMatchObject({ id: 'hourly@2026-11-30T09:00:00.000Z', payload: 'tick' });
      await q.ack(job?.token as number);
      clock.set(T0 + HOUR / 2 + 59 * 60_000);
      expect(await first.runOnce()).toEqual([]);
      expect((await q.schedules())[0]).toMatchObject({
        lastAt: T0 + HOUR / 2,
        nextAt: T0 + HOUR * 1.5,
      });
    });

    it('R25 a scheduler that read the schedule before another published and recorded an occurrence does not publish it again, though its job was acked', async () => {
      const name = h.deleteAfter(h.queueName('sched'));
      const clock = new ManualClock(T0);
      const engine = h.engine();
      const broker = new EngineBroker(engine, { clock });
      const q = await broker.queue(name);
      await q.schedule('often', 1000);
      clock.set(T0 + 1000);
      // The second scheduler's pass read the schedules here, before the first one's pass ran.
      const seen = (await engine.listSchedules()).filter((schedule) => schedule.queue === name);
      expect(await broker.scheduler().runOnce()).toHaveLength(1);
      const [job] = await q.receive();
      expect(await q.ack(job?.token as number)).toBe(true);
      const late = new EngineBroker(engine, { clock }).scheduler();
      const list = vi.spyOn(engine, 'listSchedules').mockResolvedValueOnce(seen);
      try {
        expect(await late.runOnce()).toEqual([]);
      } finally {
        list.mockRestore();
      }
      expect(await q.stats()).toMatchObject({ ready: 0, active: 0, acks: 1 });
    });

    it('R25 a schedule whose queue refuses the publish keeps no other from firing, and its occurrence stays due', async () => {
      const full = h.deleteAfter(h.queueName('sched-a'));
      const other = h.deleteAfter(h.queueName('sched-z'));
      const clock = new ManualClock(T0);
      const broker = new EngineBroker(h.engine(), { clock });
      const a = await broker.queue(full, { maxLength: 1 });
      const z = await broker.queue(other);
      await a.publish({ id: 'filler', payload: 0 });
      await a.schedule('tick', 1000);
      await z.schedule('tick', 1000);
      clock.set(T0 + 1000);
      const scheduler = broker.scheduler();
      // Listed queue by queue: the full one comes first.
      const failed = await scheduler.runOnce().catch((error: unknown) => error);
      expect(failed).toBeInstanceOf(AggregateError);
      expect((failed as AggregateError).message).toContain(`${full}/tick`);
      expect((failed as AggregateError).errors).toEqual([expect.any(QueueFullError)]);
      expect((await z.inspect()).ready).toEqual(['tick@2026-11-30T08:30:01.000Z']);
      expect((await a.schedules())[0]?.lastAt).toBeUndefined();
      const onError = vi.fn();
      scheduler.start(onError);
      await vi.waitFor(() => expect(onError).toHaveBeenCalled(), PASS_WAIT);
      await scheduler.stop();
      expect(onError.mock.calls[0]).toEqual([
        expect.any(QueueFullError),
        { queue: full, name: 'tick' },
      ]);
      // Room again: the next pass publishes the latest occurrence (R25's missed occurrences).
      const [filler] = await a.receive();
      await a.ack(filler?.token as number);
      clock.set(T0 + 3000);
      expect((await scheduler.runOnce()).map((p) => [p.queue, p.id])).toEqual([
        [full, 'tick@2026-11-30T08:30:03.000Z'],
        [other, 'tick@2026-11-30T08:30:03.000Z'],
      ]);
    });

    it('R25 a running scheduler passes at each occurrence, not an interval after its last pass: none is passed over', async () => {
      const name = h.deleteAfter(h.queueName('sched'));
      const clock = new ManualClock(T0);
      const broker = new EngineBroker(h.engine(), { clock });
      const q = await broker.queue(name);
      await q.schedule('tick', 1000);
      const scheduler = broker.scheduler({ intervalMs: 10_000 });
      scheduler.start();
      try {
        for (let k = 1; k <= 4; k++) {
          // The loop asleep on the clock after its pass: moved before the loop computed its
          // sleep, the clock would be at or past the next occurrence then, and the loop would
          // sleep the least gap between passes, which this clock, moved by the test alone,
          // never ends.
          await vi.waitFor(() => expect(clock.waiting).toBe(1), PASS_WAIT);
          // Landing on the occurrence, or a little past it as a busy process would.
          clock.set(T0 + k * 1000 + (k % 2) * 300);
          await vi.waitFor(async () => expect((await q.stats()).ready).toBe(k), PASS_WAIT);
        }
      } finally {
        await scheduler.stop();
      }
      expect((await q.inspect()).ready).toEqual([
        'tick@2026-11-30T08:30:01.000Z',
        'tick@2026-11-30T08:30:02.000Z',
        'tick@2026-11-30T08:30:03.000Z',
        'tick@2026-11-30T08:30:04.000Z',
      ]);
    });

    it('R25 after downtime only the latest missed occurrence is published', async () => {
      const name = h.deleteAfter(h.queueName('sched'));
      const clock = new ManualClock(T0);
      const broker = new EngineBroker(h.engine(), { clock });
      const q = await broker.queue(name);
      await q.schedule('every-minute', 60_000);
      clock.set(T0 + 10 * 60_000 + 5);
      const published = await broker.scheduler().runOnce();
      expect(published.map((p) => p.at)).toEqual([T0 + 10 * 60_000]);
      expect((await q.inspect()).ready).toEqual(['every-minute@2026-11-30T08:40:00.000Z']);
    });

    it('R25 a cron expression is read in the schedule time zone', async () => {
      const name = h.deleteAfter(h.queueName('sched'));
      const clock = new ManualClock(T0);
      const broker = new EngineBroker(h.engine(), { clock });
      const q = await broker.queue(name);
      // 10:00 in Paris is 09:00 UTC in November.
      const view = await q.schedule('paris', '0 10 * * *', { timezone: 'Europe/Paris' });
      expect(view.nextAt).toBe(Date.UTC(2026, 10, 30, 9, 0));
      clock.set(Date.UTC(2026, 10, 30, 9, 0));
      expect((await broker.scheduler().runOnce()).map((p) => p.id)).toEqual([
        'paris@2026-11-30T09:00:00.000Z',
      ]);
    });
  });
});

/** `inner` inside `depth` arrays, each holding the next. */
function nestedArrays(depth: number, inner: unknown): unknown {
  let value = inner;
  for (let level = 0; level < depth; level++) value = [value];
  return value;
}

let deepest: number | undefined;

/** The deepest nesting of arrays JSON.stringify writes here, as this process's stack allows. */
function deepestJson(): number {
  deepest ??= searchDeepestJson();
  return deepest;
}

function searchDeepestJson(): number {
  let low = 1;
  let high = 100_000;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    try {
      JSON.stringify(nestedArrays(middle, 1));
      low = middle;
    } catch {
      high = middle - 1;
    }
  }
  return low;
}
