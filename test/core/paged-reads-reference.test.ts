import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type DeadLetter,
  type InspectView,
  type JobView,
  LeaseQueue,
  type QueueLinks,
} from '../../src/core/index.js';

/**
 * R24 R26 inspection: `moveJobs` in steps (`max`), `inspect` with a limit and `deadLetterPage`
 * read only as far as they go (ready, delayed, waiting and dead jobs in order, from where they
 * start), and must give what a straightforward reading of the whole queue gives: here worked
 * out from `job(id)` of every job, on random queues. The queue `src` takes dead letters of
 * `o1` and `o2` (jobs with an origin, R26) and moves jobs to `dst`, to their origin, to itself
 * or to a queue that does not exist; `dst` holds some of the ids already, and refuses those.
 */

const POOL = Array.from({ length: 24 }, (_, i) => `j${i}`);
const GROUPS = ['g0', 'g1', 'g2'];
/** Jobs that come to `src` by dying in `o1` or `o2` before the history starts. */
const ARRIVALS = [
  { queue: 'o1', id: 'a0', group: 'g0' },
  { queue: 'o2', id: 'a1' },
  { queue: 'o1', id: 'a2', priority: 2 },
  { queue: 'o2', id: 'a3', group: 'g1' },
  { queue: 'o1', id: 'a4', group: 'g0' },
  { queue: 'o2', id: 'a5', priority: 1, group: 'g2' },
];
const IDS = [...POOL, ...ARRIVALS.map((a) => a.id)];
/** A few delays, so that delayed jobs are often due at the same tick (publish order then). */
const DELAYS = [0, 0, 0, 5, 10, 10];

type Step =
  | {
      kind: 'publish';
      jobs: { id: number; delay: number; priority: number; group: number | undefined }[];
    }
  | { kind: 'reserve'; max: number }
  | { kind: 'ack'; pick: number }
  | { kind: 'nack'; pick: number; requeue: boolean; delay: number }
  | { kind: 'cancel'; id: number; remove: boolean }
  | { kind: 'redrive'; ids: number[] | undefined }
  | { kind: 'purge'; ids: number[] }
  | { kind: 'wait'; by: number }
  // The reads checked: now and then, so that jobs also leave and come back between two reads.
  | { kind: 'look' }
  | {
      kind: 'move';
      max: number | undefined;
      to: 'dst' | 'src' | 'missing' | undefined;
      origins: readonly string[] | undefined;
      ids: number[] | undefined;
    };

const id = fc.nat({ max: IDS.length - 1 });
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('publish' as const),
      jobs: fc.array(
        fc.record({
          id: fc.nat({ max: POOL.length - 1 }),
          delay: fc.constantFrom(...DELAYS),
          priority: fc.constantFrom(0, 0, 1, 2),
          group: fc.option(fc.nat({ max: GROUPS.length - 1 }), { nil: undefined }),
        }),
        { minLength: 1, maxLength: 5 },
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('reserve' as const),
      max: fc.integer({ min: 1, max: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('ack' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('nack' as const),
      pick: fc.nat(),
      requeue: fc.boolean(),
      delay: fc.constantFrom(0, 5, 10),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('cancel' as const), id, remove: fc.boolean() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('redrive' as const),
      ids: fc.option(fc.array(id, { maxLength: 4 }), { nil: undefined }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('purge' as const),
      ids: fc.array(id, { maxLength: 2 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      by: fc.integer({ min: 0, max: 7 }),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'look' as const }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('move' as const),
      max: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined, freq: 4 }),
      to: fc.constantFrom(
        'dst' as const,
        'dst' as const,
        'src' as const,
        'missing' as const,
        undefined,
      ),
      origins: fc.option(fc.constantFrom(['o1'], ['o2'], ['o1', 'o2'], ['elsewhere']), {
        nil: undefined,
        freq: 2,
      }),
      ids: fc.oneof(
        { weight: 3, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.array(id, { maxLength: 6 }) },
      ),
    }),
  },
);

/** The queues, what `src` was told, and what its jobs' order depends on that views do not say. */
class World {
  readonly queues = new Map<string, LeaseQueue>();
  /** Every job a queue took from another, in order: [queue, id]. */
  readonly arrivals: [string, string][] = [];
  readonly src: LeaseQueue;
  now = 1;
  /** Each job's place in `src`'s order of publishes and arrivals: delayed jobs due together. */
  private readonly made = new Map<string, number>();
  private nextMade = 1;
  /** The tick each job that may wait became due at: where it goes when its group goes on. */
  private readonly dueAt = new Map<string, number>();
  /** Each dead job's place in the order of deaths. */
  private readonly deathSeq = new Map<string, number>();
  private nextDeath = 1;
  private deadIds: string[] = [];

  constructor() {
    const links: QueueLinks = {
      admit: (queue, now, transfer) => {
        if (this.queues.get(queue)?.admit(now, transfer) !== true) return false;
        this.arrivals.push([queue, transfer.id]);
        return true;
      },
    };
    const make = (name: string, options: ConstructorParameters<typeof LeaseQueue>[0]) => {
      const queue = new LeaseQueue(options);
      queue.connect(name, links);
      this.queues.set(name, queue);
      return queue;
    };
    this.src = make('src', { visibility: 1_000_000, maxDeliveries: 3 });
    make('dst', {});
    make('o1', { deadLetterQueue: 'src', visibility: 1_000_000 });
    make('o2', { deadLetterQueue: 'src', visibility: 1_000_000 });
    // dst holds some ids already: moves of those are refused.
    this.queue('dst').publishBatch(0, [{ id: 'j3' }, { id: 'j7' }, { id: 'a1' }]);
    for (const arrival of ARRIVALS) {
      const origin = this.queue(arrival.queue);
      origin.publish(0, {
        id: arrival.id,
        ...(arrival.group === undefined ? {} : { group: arrival.group }),
        ...(arrival.priority === undefined ? {} : { priority: arrival.priority }),
      });
      for (const delivery of origin.reserve(0, { max: 10 })) {
        origin.nack(0, delivery.token, { requeue: false });
      }
    }
    for (const [queue, arrived] of this.arrivals) {
      if (queue !== 'src') continue;
      this.made.set(arrived, this.nextMade++);
      this.dueAt.set(arrived, 0);
    }
    this.arrivals.length = 0;
    this.noteDeaths();
  }

  queue(name: string): LeaseQueue {
    return this.queues.get(name) as LeaseQueue;
  }

  run(step: Step): void {
    const src = this.src;
    const now = this.now;
    switch (step.kind) {
      case 'publish': {
        const jobs = step.jobs.map((job) => ({
          id: POOL[job.id] as string,
          delay: job.delay,
          priority: job.priority,
          ...(job.group === undefined ? {} : { group: GROUPS[job.group] }),
        }));
        src.publishBatch(now, jobs).forEach((result, index) => {
          if (result.duplicate) return;
          this.made.set(result.id, this.nextMade++);
          this.dueAt.set(result.id, now + (jobs[index]?.delay ?? 0));
        });
        break;
      }
      case 'reserve':
        src.reserve(now, { max: step.max });
        break;
      case 'ack':
      case 'nack': {
        const active = src.deliveries();
        const delivery = active[step.pick % Math.max(1, active.length)];
        if (delivery === undefined) break;
        if (step.kind === 'ack') src.ack(now, delivery.token);
        else if (!step.requeue) src.nack(now, delivery.token, { requeue: false });
        else src.nack(now, delivery.token, { requeue: true, delay: step.delay });
        break;
      }
      case 'cancel':
        src.cancel(now, IDS[step.id] as string, { remove: step.remove });
        break;
      case 'redrive': {
        const named = step.ids?.map((n) => IDS[n] as string);
        const dead = new Set(this.deadIds);
        src.redrive(now, named);
        // A redriven job that joins its group again waits from now.
        for (const redriven of named ?? this.deadIds)
          if (dead.has(redriven)) this.dueAt.set(redriven, now);
        break;
      }
      case 'purge':
        src.purge(
          now,
          step.ids.map((n) => IDS[n] as string),
        );
        break;
      case 'wait':
        this.now += step.by;
        src.stats(this.now);
        break;
      case 'move':
        this.move(step);
        break;
      case 'look':
        break;
    }
    this.noteDeaths();
  }

  /** One moveJobs call, with what a reading of every job says it moves and leaves. */
  private move(step: Extract<Step, { kind: 'move' }>): void {
    const src = this.src;
    const now = this.now;
    src.stats(now);
    // Ready as the list holds it (front first, by priority); delayed and waiting worked out.
    const readyBefore = src.inspect().ready;
    const views = this.views();
    const delayedBefore = this.delayed(views);
    const waitingBefore = this.waiting(views);
    const named = step.ids?.map((n) => IDS[n] as string);
    const max = step.max ?? Number.POSITIVE_INFINITY;
    // Each group's waiting jobs in group order: the first goes on when the one in play moves.
    const waitingOf = new Map<string, string[]>();
    for (const waiting of waitingBefore) {
      const group = views.get(waiting)?.group as string;
      waitingOf.set(group, [...(waitingOf.get(group) ?? []), waiting]);
    }
    const candidates =
      named === undefined
        ? [...readyBefore, ...delayedBefore.map((d) => d.id)]
        : named.filter((n) => ['ready', 'delayed'].includes(views.get(n)?.state ?? ''));
    const considered = new Set<string>();
    const moved: [string, string][] = [];
    const wentOn: string[] = [];
    for (let index = 0; index < candidates.length && moved.length < max; index++) {
      const job = candidates[index] as string;
      if (considered.has(job)) continue;
      considered.add(job);
      const view = views.get(job) as JobView;
      const origin = view.origin?.queue;
      if (step.origins !== undefined && (origin === undefined || !step.origins.includes(origin))) {
        continue;
      }
      const target = step.to ?? origin;
      if (target === undefined || target === 'src') continue;
      const into = this.queues.get(target);
      if (into === undefined || into.job(job) !== undefined) continue;
      moved.push([target, job]);
      if (view.group === undefined) continue;
      const next = waitingOf.get(view.group)?.shift();
      if (next === undefined) continue;
      wentOn.push(next);
      if (named === undefined || named.includes(next)) candidates.push(next);
    }
    const gone = new Set(moved.map(([, job]) => job));
    // Ready by priority, each front first; a member that went on joins the back of its own.
    const ready = new Map<number, string[]>();
    const put = (job: string) => {
      const priority = views.get(job)?.priority ?? 0;
      ready.set(priority, [...(ready.get(priority) ?? []), job]);
    };
    for (const job of readyBefore) if (!gone.has(job)) put(job);
    const delayed = delayedBefore.filter((d) => !gone.has(d.id));
    for (const job of wentOn) {
      if (gone.has(job)) continue;
      const due = this.dueAt.get(job) as number;
      if (due > now) delayed.push({ id: job, availableAt: due });
      else put(job);
    }
    const wentOnSet = new Set(wentOn);

    this.arrivals.length = 0;
    const count = src.moveJobs(now, {
      ...(step.to === undefined ? {} : { to: step.to }),
      ...(step.origins === undefined ? {} : { origins: step.origins }),
      ...(step.max === undefined ? {} : { max: step.max }),
      ...(named === undefined ? {} : { ids: named }),
    });
    expect(count).toBe(moved.length);
    expect(this.arrivals).toEqual(moved);
    const after = src.inspect();
    const byPriority = [...ready.entries()].sort(([a], [b]) => b - a).flatMap(([, jobs]) => jobs);
    expect(after.ready).toEqual(byPriority);
    expect(after.delayed).toEqual(this.inOrder(delayed));
    expect(after.waiting ?? []).toEqual(waitingBefore.filter((job) => !wentOnSet.has(job)));
    for (const job of gone) expect(src.job(job)).toBeUndefined();
  }

  /** `job(id)` of every job of `src`. */
  views(): Map<string, JobView> {
    const views = new Map<string, JobView>();
    for (const job of IDS) {
      const view = this.src.job(job);
      if (view !== undefined) views.set(job, view);
    }
    return views;
  }

  /** The delayed jobs in promotion order. */
  delayed(views: Map<string, JobView>): { id: string; availableAt: number }[] {
    return this.inOrder(
      [...views.values()]
        .filter((view) => view.state === 'delayed')
        .map((view) => ({ id: view.id, availableAt: view.availableAt as number })),
    );
  }

  /** The waiting jobs in group order (R24): by group sequence number. */
  waiting(views: Map<string, JobView>): string[] {
    return [...views.values()]
      .filter((view) => view.state === 'waiting')
      .sort((a, b) => (a.groupSeq as number) - (b.groupSeq as number))
      .map((view) => view.id);
  }

  /** Delayed jobs in promotion order: by when due, then in the order `src` took them. */
  inOrder(delayed: { id: string; availableAt: number }[]): { id: string; availableAt: number }[] {
    return [...delayed].sort(
      (a, b) =>
        a.availableAt - b.availableAt ||
        (this.made.get(a.id) as number) - (this.made.get(b.id) as number),
    );
  }

  /** The dead jobs now, each new one given the next place in the order of deaths. */
  private noteDeaths(): void {
    const dead = this.src.deadLetters().map((letter) => letter.id);
    const known = new Set(this.deadIds);
    for (const job of dead) if (!known.has(job)) this.deathSeq.set(job, this.nextDeath++);
    this.deadIds = dead;
  }

  /** Inspect, whole and cut, against the views of every job. */
  checkInspect(limits: number[]): void {
    const views = this.views();
    const whole = this.src.inspect();
    expect(whole.delayed).toEqual(this.delayed(views));
    const waiting = this.waiting(views);
    expect(whole.waiting ?? []).toEqual(waiting);
    expect(whole.waiting === undefined).toBe(waiting.length === 0);
    for (const limit of limits) {
      const cut = (list: unknown[]) => list.slice(0, limit);
      const expected: InspectView = {
        queueTime: whole.queueTime,
        ready: cut(whole.ready) as string[],
        delayed: cut(whole.delayed) as InspectView['delayed'],
        active: cut(whole.active) as InspectView['active'],
        dead: cut(whole.dead) as InspectView['dead'],
        ...(waiting.length === 0 ? {} : { waiting: cut(waiting) as string[] }),
      };
      expect(this.src.inspect({ limit })).toEqual(expected);
    }
  }

  /** Pages of dead letters from any place, and a walk over them all, against the whole list. */
  checkDeadPages(limit: number, starts: number[], payloads: boolean): void {
    const all = this.src.deadLetters();
    const shown = (letter: DeadLetter) => {
      if (payloads) return letter;
      const { payload: _, ...rest } = letter;
      return rest;
    };
    const seqOf = (letter: DeadLetter) => this.deathSeq.get(letter.id) as number;
    for (const start of [0, ...starts.map((s) => s % (this.nextDeath + 2))]) {
      const after = all.filter((letter) => seqOf(letter) > start);
      const page = this.src.deadLetterPage({
        limit,
        payloads,
        ...(start === 0 ? {} : { after: String(start) }),
      });
      expect(page.deadLetters).toEqual(after.slice(0, limit).map(shown));
      const last = after[limit - 1];
      expect(page.next).toBe(
        after.length > limit && last !== undefined ? String(seqOf(last)) : undefined,
      );
    }
    const walked: DeadLetter[] = [];
    let next: string | undefined;
    do {
      const page = this.src.deadLetterPage({
        limit,
        payloads,
        ...(next === undefined ? {} : { after: next }),
      });
      walked.push(...page.deadLetters);
      next = page.next;
    } while (next !== undefined);
    expect(walked).toEqual(all.map(shown));
  }
}

describe('R24 R26 paged reads against a reading of every job', () => {
  it('moveJobs in steps, inspect with a limit and dead letter pages give the same jobs, order and cursors', {
    timeout: 120_000,
  }, () => {
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 80, size: 'max' }),
        fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 3 }),
        fc.array(fc.nat({ max: 200 }), { maxLength: 3 }),
        fc.boolean(),
        (steps, limits, starts, payloads) => {
          const world = new World();
          const look = () => {
            world.checkInspect(limits);
            world.checkDeadPages(limits[0] as number, starts, payloads);
          };
          look();
          for (const next of steps) {
            world.run(next);
            if (next.kind === 'look') look();
          }
          look();
        },
      ),
      { numRuns: 100 },
    );
  });

  it('a job that goes on, dies and waits again is listed once, at its new place in its group', () => {
    const q = new LeaseQueue({ visibility: 1_000 });
    q.publishBatch(
      0,
      ['j0', 'j1', 'j2', 'j3'].map((id) => ({ id, group: 'g' })),
    );
    expect(q.inspect({ limit: 10 }).waiting).toEqual(['j1', 'j2', 'j3']);
    // j1 goes on, then dies, then comes back behind j3; nothing is listed in between.
    const [first] = q.reserve(1);
    q.ack(1, first?.token as number);
    const [second] = q.reserve(2);
    expect(second?.id).toBe('j1');
    q.nack(2, second?.token as number, { requeue: false });
    expect(q.redrive(3, ['j1'])).toBe(1);
    expect(q.inspect({ limit: 10 }).waiting).toEqual(['j3', 'j1']);
    expect(q.inspect({ limit: 1 }).waiting).toEqual(['j3']);
    expect(q.inspect().ready).toEqual(['j2']);
  });

  it('a job that dies, is redriven and dies again is paged once, at its new place', () => {
    const q = new LeaseQueue({ visibility: 1_000 });
    q.publishBatch(
      0,
      ['j0', 'j1', 'j2'].map((id) => ({ id })),
    );
    const kill = (now: number) => {
      for (const delivery of q.reserve(now, { max: 3 })) {
        q.nack(now, delivery.token, { requeue: false });
      }
    };
    kill(1);
    expect(q.deadLetterPage({ limit: 10 }).deadLetters.map((d) => d.id)).toEqual([
      'j0',
      'j1',
      'j2',
    ]);
    // j0 comes back and dies again, after the others; nothing is paged in between.
    expect(q.redrive(2, ['j0'])).toBe(1);
    kill(3);
    const page = q.deadLetterPage({ limit: 2 });
    expect(page.deadLetters.map((d) => d.id)).toEqual(['j1', 'j2']);
    expect(page.next).toBe('3');
    const rest = q.deadLetterPage({ limit: 2, after: page.next as string });
    expect(rest.deadLetters.map((d) => d.id)).toEqual(['j0']);
    expect(rest.next).toBeUndefined();
  });
});
