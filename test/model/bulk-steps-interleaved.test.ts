import fc from 'fast-check';
import { afterEach, expect, it, vi } from 'vitest';
import type { Delivery, PublishInput } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { BULK_STEP } from '../../src/engine/sql/bulk-steps.js';
import { QueueOps } from '../../src/engine/sql/queue-ops.js';
import { useConformanceEngines } from '../conformance/engines.js';
import { describeEngines } from '../conformance/suite.js';
import { assertParameters, modelRuns, modelSeed } from './runner.js';

/**
 * R14, R20, R23, R24, R26, R28: a moveJobs, redrive or purge of all, alone in its call, takes
 * steps on the SQL engines, and other calls run between them. Random calls are queued at each
 * step's end, so that they run after it and before the next: publishes, reserves, acks, nacks
 * to the front or with a delay, rejections and cancels. Whatever they do, once the command is
 * over:
 *
 * - every ready band is whole: the queue hands out its ready jobs, all of them, in its order;
 * - the figures are those of the jobs, and a message group has one first member at most, and
 *   one whenever it has members waiting;
 * - each job is in one place, or gone by a call that removes it;
 * - every job no other call touched was taken by the command: moved (in its band's order), or
 *   redriven, or purged.
 *
 * LEASEQ_MODEL_RUNS and LEASEQ_MODEL_SEED widen or replay a run.
 */
const engines = await useConformanceEngines({ client: false });

afterEach(() => {
  vi.restoreAllMocks();
});

/** A call made between two steps of the command. */
type Between =
  | { kind: 'publish'; priority: number; group: number | undefined }
  | { kind: 'reserve'; max: number }
  | { kind: 'settle'; pick: number; how: 'ack' | 'front' | 'delay' | 'reject' }
  | { kind: 'cancel'; pick: number; remove: boolean; among: 'stay' | 'any' };

const betweenArbitrary: fc.Arbitrary<Between> = fc.oneof(
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('publish' as const),
      priority: fc.integer({ min: 0, max: 2 }),
      group: fc.option(fc.integer({ min: 0, max: 9 }), { nil: undefined }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('reserve' as const),
      max: fc.integer({ min: 1, max: 30 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('settle' as const),
      pick: fc.nat(),
      how: fc.constantFrom('ack' as const, 'front' as const, 'delay' as const, 'reject' as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('cancel' as const),
      pick: fc.nat(),
      remove: fc.boolean(),
      among: fc.constantFrom('stay' as const, 'any' as const),
    }),
  },
);

/** A job of the queue at the start: its priority, group, delay, and whether the target has it. */
interface JobSpec {
  priority: number;
  group: number | undefined;
  delayed: boolean;
  inTarget: boolean;
}

/** The jobs of a run, from its seed: fast-check arrays of thousands of records shrink slowly. */
function jobsOf(count: number, stayShare: number, seed: number): JobSpec[] {
  let state = seed >>> 0 || 1;
  const random = () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 2 ** 32;
  };
  return Array.from(
    { length: count },
    (): JobSpec => ({
      priority: random() < 0.75 ? 0 : random() < 0.5 ? 1 : 2,
      group: random() < 0.12 ? Math.floor(random() * 10) : undefined,
      delayed: random() < 0.05,
      inTarget: random() < stayShare,
    }),
  );
}

type Command = 'move' | 'redrive' | 'purge';

const scenarioArbitrary = fc.record({
  command: fc.constantFrom<Command>('move', 'move', 'redrive', 'purge'),
  // 2 to 3.5 steps of jobs, a share of them in the target already.
  count: fc.integer({ min: 2 * BULK_STEP + 100, max: 3 * BULK_STEP + 500 }),
  // Many staying makes the calls between steps move the jobs not read yet (a cancel closes its
  // gap from the nearer end of the band).
  stayShare: fc.oneof(
    fc.double({ min: 0, max: 0.5, noNaN: true }),
    fc.double({ min: 0.6, max: 0.95, noNaN: true }),
  ),
  seed: fc.integer(),
  between: fc.array(fc.array(betweenArbitrary, { maxLength: 40, size: 'medium' }), {
    minLength: 1,
    maxLength: 6,
  }),
});

const idOf = (n: number) => `j${n}`;

const TIME_LIMIT_MS = 60_000;

async function publishAll(queue: QueueHandle, now: number, jobs: PublishInput[]): Promise<void> {
  for (let start = 0; start < jobs.length; start += 500) {
    await queue.publishBatch(now, jobs.slice(start, start + 500));
  }
}

describeEngines(
  engines.filter((underTest) => underTest.name !== 'memory'),
  (h) => {
    const numRuns = modelRuns(8);
    it(`R14 R20 R26 calls between the steps of a bulk command leave every job in one place, the bands whole (${numRuns} runs)`, {
      timeout: Math.max(180_000, numRuns * 15_000),
    }, async ({ onTestFailed }) => {
      const runSeed = modelSeed();
      onTestFailed(() => {
        console.error(
          `bulk steps run of ${h.name} failed; replay with LEASEQ_MODEL_SEED=${runSeed}`,
        );
      });
      const property = fc.asyncProperty(
        scenarioArbitrary,
        async ({ command, count, stayShare, seed, between }) => {
          const jobs = jobsOf(count, stayShare, seed);
          const source = await h.queue({ maxDeliveries: 1 });
          const targetName = h.queueName('target');
          const target = await h.engine().queue(targetName);
          const groupOf = new Map<string, string>();
          const priorityOf = new Map<string, number>();
          const published: PublishInput[] = jobs.map((job, n) => {
            const input: PublishInput = { id: idOf(n) };
            if (job.priority > 0) input.priority = job.priority;
            if (job.group !== undefined) input.group = `g${job.group}`;
            if (job.delayed) input.delay = 1_000_000;
            priorityOf.set(idOf(n), job.priority);
            if (input.group !== undefined) groupOf.set(idOf(n), input.group);
            return input;
          });
          await publishAll(source, 0, published);
          const inTarget = jobs.flatMap((job, n) => (job.inTarget ? [idOf(n)] : []));
          await publishAll(
            target,
            0,
            inTarget.map((id) => ({ id })),
          );
          if (command !== 'move') {
            // Every ready job dies (maxDeliveries 1), the groups' next members after them.
            const session = await source.openSession(0);
            for (;;) {
              const taken = await source.reserve(0, { max: 500, session });
              const last = taken.at(-1);
              if (last === undefined) break;
              await source.nackUpTo(0, session, last.token, { requeue: false });
            }
            await source.closeSession(0, session);
          }
          const start = await source.inspect();
          const startStats = await source.stats(0);

          /** Ids another call touched: reserved, cancelled, or published meanwhile. */
          const touched = new Set<string>();
          /** Ids gone for good by another call (acked, cancelled with remove). */
          const removed = new Set<string>();
          const live: Delivery[] = [];
          const pending: Promise<unknown>[] = [];
          const stayIds = inTarget.length > 0 ? inTarget : [idOf(0)];
          let boundary = 0;
          let now = 1;
          let extra = 0;

          /** Queues the calls of the next boundary: they run before the next step. */
          const queueBetween = () => {
            const calls = between[boundary];
            boundary += 1;
            if (calls === undefined) return;
            now += 1;
            const at = now;
            for (const call of calls) {
              if (call.kind === 'publish') {
                const id = `x${extra++}`;
                touched.add(id);
                if (call.priority > 0) priorityOf.set(id, call.priority);
                if (call.group !== undefined) groupOf.set(id, `g${call.group}`);
                pending.push(
                  source.publish(at, {
                    id,
                    ...(call.priority > 0 ? { priority: call.priority } : {}),
                    ...(call.group === undefined ? {} : { group: `g${call.group}` }),
                  }),
                );
              } else if (call.kind === 'reserve') {
                pending.push(
                  source.reserve(at, { max: call.max }).then((taken) => {
                    for (const delivery of taken) {
                      touched.add(delivery.id);
                      live.push(delivery);
                    }
                  }),
                );
              } else if (call.kind === 'settle') {
                if (live.length === 0) continue;
                const [delivery] = live.splice(call.pick % live.length, 1) as [Delivery];
                const settled =
                  call.how === 'ack'
                    ? source.ack(at, delivery.token).then((acked) => {
                        if (acked) removed.add(delivery.id);
                      })
                    : source.nack(
                        at,
                        delivery.token,
                        call.how === 'front'
                          ? {}
                          : call.how === 'delay'
                            ? { delay: 1_000_000 }
                            : { requeue: false },
                      );
                pending.push(settled);
              } else {
                const pool = call.among === 'stay' ? stayIds : published.map((job) => job.id);
                const id = pool[call.pick % pool.length] as string;
                touched.add(id);
                pending.push(
                  source.cancel(at, id, { remove: call.remove }).then((cancelled) => {
                    if (cancelled && call.remove) removed.add(id);
                  }),
                );
              }
            }
          };

          // A step's end: the calls queued here run after its commit, before the next step.
          // Called with its third argument, the step's state, a QueueOps method is a step.
          // biome-ignore lint/suspicious/noExplicitAny: the three methods' own argument types
          type Method = (this: QueueOps, now: number, what: any, step?: any) => Promise<number>;
          const steps = (original: Method): Method =>
            async function (this: QueueOps, now, what, step) {
              const result = await original.call(this, now, what, step);
              if (this.q.name === source.name && step !== undefined) queueBetween();
              return result;
            };
          const { moveJobs, redrive, purge } = QueueOps.prototype;
          vi.spyOn(QueueOps.prototype, 'moveJobs').mockImplementation(steps(moveJobs as Method));
          vi.spyOn(QueueOps.prototype, 'redrive').mockImplementation(steps(redrive as Method));
          vi.spyOn(QueueOps.prototype, 'purge').mockImplementation(steps(purge as Method));
          let answer: number;
          try {
            answer =
              command === 'move'
                ? await source.moveJobs(1, { to: targetName })
                : command === 'redrive'
                  ? await source.redrive(1)
                  : await source.purge(1);
            await Promise.all(pending);
          } finally {
            vi.restoreAllMocks();
          }
          expect(boundary).toBeGreaterThan(0);

          now += 1;
          const views = new Map<string, Awaited<ReturnType<QueueHandle['inspect']>>>();
          for (const queue of [source, target]) {
            const view = await queue.inspect();
            views.set(queue.name, view);
            const stats = await queue.stats(now);
            const waiting = view.waiting ?? [];
            expect(stats).toMatchObject({
              ready: view.ready.length,
              delayed: view.delayed.length,
              active: view.active.length,
              dead: view.dead.length,
              waiting: waiting.length,
            });
            // A group: one first member (ready, delayed or active) at most; one if some wait.
            const firsts = new Map<string, number>();
            for (const id of [
              ...view.ready,
              ...view.delayed.map((job) => job.id),
              ...view.active.map((job) => job.id),
            ]) {
              // The target's own jobs have no group.
              const group = queue === target && inTarget.includes(id) ? undefined : groupOf.get(id);
              if (group !== undefined) firsts.set(group, (firsts.get(group) ?? 0) + 1);
            }
            for (const [group, count] of firsts)
              expect({ group, count }).toEqual({ group, count: 1 });
            for (const id of waiting) expect(firsts.get(groupOf.get(id) as string)).toBe(1);
          }
          const left = views.get(source.name) as NonNullable<ReturnType<typeof views.get>>;
          const arrivedView = views.get(targetName) as NonNullable<ReturnType<typeof views.get>>;

          // Each job in one place, or gone by a call that removes it (or by the purge).
          const places = new Map<string, string[]>();
          for (const [name, view] of views) {
            for (const id of [
              ...view.ready,
              ...view.delayed.map((job) => job.id),
              ...view.active.map((job) => job.id),
              ...view.dead.map((job) => job.id),
              ...(view.waiting ?? []),
            ]) {
              places.set(id, [...(places.get(id) ?? []), name]);
            }
          }
          const startDead = new Set(start.dead.map((job) => job.id));
          for (const id of [...published.map((job) => job.id as string)]) {
            const where = places.get(id) ?? [];
            if (inTarget.includes(id)) {
              // The target's own copy, and the source's unless it went.
              expect(where.filter((name) => name === targetName)).toHaveLength(1);
              expect(where.filter((name) => name === source.name).length).toBeLessThanOrEqual(1);
              continue;
            }
            if (removed.has(id) || (command === 'purge' && startDead.has(id))) {
              expect(where.length).toBeLessThanOrEqual(command === 'purge' ? 1 : 0);
              continue;
            }
            expect({ id, where: where.length }).toEqual({ id, where: 1 });
          }

          // Every job no other call touched was taken by the command.
          if (command === 'move') {
            const arrived = [
              ...arrivedView.ready,
              ...arrivedView.delayed.map((job) => job.id),
              ...(arrivedView.waiting ?? []),
            ].filter((id) => !inTarget.includes(id));
            expect(arrived).toHaveLength(answer);
            const arrivedSet = new Set(arrived);
            const untouched = start.ready.filter(
              (id) => !touched.has(id) && !inTarget.includes(id) && !groupOf.has(id),
            );
            expect(untouched.filter((id) => !arrivedSet.has(id))).toEqual([]);
            // In their band's order, as they stood.
            for (const priority of [0, 1, 2]) {
              const inBand = (id: string) =>
                (priorityOf.get(id) ?? 0) === priority && untouched.includes(id);
              expect(arrivedView.ready.filter(inBand)).toEqual(start.ready.filter(inBand));
            }
          } else {
            const stats = await source.stats(now);
            const counter = command === 'redrive' ? 'redriven' : 'purged';
            expect(stats[counter] - startStats[counter]).toBe(answer);
            const stillDead = new Set(left.dead.map((job) => job.id));
            const untouchedDead = start.dead.filter((job) => !touched.has(job.id));
            expect(untouchedDead.filter((job) => stillDead.has(job.id))).toEqual([]);
          }

          // The bands are whole: every ready job is handed out, in the queue's order.
          for (const [queue, view] of [
            [source, left],
            [target, arrivedView],
          ] as const) {
            const session = await queue.openSession(now);
            const handed: string[] = [];
            for (;;) {
              const taken = await queue.reserve(now, { max: 500, session });
              if (taken.length === 0) break;
              handed.push(...taken.map((delivery) => delivery.id));
            }
            expect(handed).toEqual(view.ready);
          }
          await h.engine().deleteQueue(targetName);
        },
      );
      await fc.assert(property, {
        ...assertParameters(numRuns, runSeed),
        // A run publishes thousands of jobs: a failure is still reported with its seed, shrunk
        // as far as the limit allows.
        plugins: [fc.interruptAfterTimeLimit(TIME_LIMIT_MS)],
      });
    });
  },
);
