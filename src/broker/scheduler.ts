import { NotFoundError, ValidationError } from '../core/index.js';
import type { Engine, ScheduleRecord } from '../engine/index.js';
import type { Clock } from './clock.js';
import { dueOccurrence, nextOccurrence, occurrenceId } from './schedule-times.js';

/** One occurrence a scheduler pass published. */
export interface PublishedOccurrence {
  /** The queue it was published into. */
  queue: string;
  /** The schedule's name. */
  name: string;
  /** The occurrence's time (ms). */
  at: number;
  /** The job's id: `name@ISO time`. */
  id: string;
  /** true when the job was already there (another scheduler published it first). */
  duplicate: boolean;
}

/** A schedule, by its queue and name. */
export interface ScheduleRef {
  /** The schedule's queue. */
  queue: string;
  /** The schedule's name within its queue. */
  name: string;
}

/** A schedule whose due occurrence a pass could not publish. */
interface ScheduleFailure extends ScheduleRef {
  error: unknown;
}

/**
 * The least time between the loop's passes (ms): an occurrence is published at most this late,
 * and far less than the 1000 ms a schedule's period is at least.
 */
const MIN_PASS_GAP_MS = 100;

/**
 * A pass lets the event loop run after this many schedules, or this long (ms), whichever comes
 * first: a pass over thousands of schedules would otherwise hold the process (R25's loop runs in
 * every `leaseq serve`) for as long as it takes.
 */
const SCHEDULES_PER_TURN = 256;
const MS_PER_TURN = 10;

/** Lets timers, I/O and the callbacks already waiting run before the pass goes on. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A schedule a pass found with nothing due at `from`. Its times depend on these fields only, and
 * it has no occurrence in (from, nextAt): while the fields read the same, a pass at any time in
 * [from, nextAt) would find again nothing due and `nextAt` next, so it need not compute them.
 */
interface QuietSchedule {
  readonly cron: string | undefined;
  readonly every: number | undefined;
  readonly timezone: string | undefined;
  readonly createdAt: number;
  readonly lastAt: number | null;
  readonly from: number;
  readonly nextAt: number;
}

/** Options of a Scheduler (`EngineBroker.scheduler`). */
export interface SchedulerOptions {
  /**
   * The longest the loop waits between passes (ms), so that it sees schedules set meanwhile.
   * It passes at each occurrence of the schedules it knows too. Default 1000.
   */
  intervalMs?: number;
}

/**
 * Publishes the due occurrences of the schedules stored in the engine (R25). Several schedulers
 * over one storage (processes, servers) publish each occurrence once: the stored last
 * occurrence moves by compare and set, and only the scheduler that moved it publishes (its job
 * id holds its time). `runOnce()` is one pass; `start()` runs a pass at each occurrence of the
 * schedules (and at least every `intervalMs`) on the broker's Clock.
 */
export class Scheduler {
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;
  /**
   * What the last pass found of the schedules with nothing due, by queue and name: the next
   * pass skips their cron arithmetic (~0.2 ms each in a time zone) while what it reads of them
   * is unchanged. Only the schedules that pass listed are kept.
   */
  private quiet = new Map<string, QuietSchedule>();
  /**
   * The schedules that failed in the loop, by queue and name: the time (ms) before which its
   * passes do not try each again (an interval after its failure). runOnce tries them all.
   */
  private held = new Map<string, number>();

  constructor(
    private readonly engine: Engine,
    private readonly clock: Clock,
    private readonly publish: (
      queue: string,
      input: {
        /** The occurrence's job id: `name@ISO time`. */
        id: string;
        /** The schedule's payload. */
        payload: unknown;
      },
    ) => Promise<{
      /** true when a job of that id was already there. */
      duplicate: boolean;
    }>,
    private readonly options: SchedulerOptions = {},
  ) {
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw new ValidationError('scheduler options must be an object, as { intervalMs: 1000 }');
    }
    const interval = options.intervalMs;
    // 0, a negative or NaN would make a loop of passes each listing every schedule.
    if (interval !== undefined && (!Number.isSafeInteger(interval) || interval < 1)) {
      throw new ValidationError(
        `intervalMs must be an integer ≥ 1 (ms between passes), got ${String(interval)}`,
      );
    }
  }

  /**
   * One pass: publishes every due occurrence and records it; returns what it published. A
   * schedule that cannot publish (its queue full, the storage refusing) does not keep the
   * others from theirs: after the pass, the failures are thrown together as an AggregateError
   * (`errors`, one per schedule, each naming it), and their occurrences stay due for the next.
   */
  async runOnce(): Promise<PublishedOccurrence[]> {
    const { published, failures } = await this.pass();
    if (failures.length > 0) {
      const names = failures.map(({ queue, name }) => `${queue}/${name}`).join(', ');
      throw new AggregateError(
        failures.map((failure) => failure.error),
        `${failures.length} schedule(s) could not publish, tried again at the next pass: ${names}`,
      );
    }
    return published;
  }

  /**
   * Runs passes until `stop()`. A schedule that could not publish is reported to `onError` with
   * its queue and name, a pass that could not read the schedules without them; the loop goes on.
   */
  start(onError: (error: unknown, schedule?: ScheduleRef) => void = () => {}): void {
    if (this.loop !== undefined) return;
    const interval = this.options.intervalMs ?? 1000;
    const signal = this.stopping.signal;
    this.loop = (async () => {
      while (!signal.aborted) {
        let wait = interval;
        try {
          const { failures, nextAt } = await this.pass(interval);
          for (const { error, queue, name } of failures) onError(error, { queue, name });
          // At the next occurrence, not an interval after this pass ended: an interval's sleep
          // after a pass that took time could pass over an occurrence, and only the latest due
          // one is published. So too while a schedule fails: it is held back until the
          // interval has passed (its time is in nextAt), the others are not.
          // Not sooner than MIN_PASS_GAP_MS: schedules at many phases would each bring a pass,
          // and each pass lists them all.
          const floor = Math.min(interval, MIN_PASS_GAP_MS);
          wait = Math.max(floor, Math.min(interval, nextAt - this.clock.now()));
        } catch (error) {
          onError(error);
        }
        await this.clock.sleep(wait, signal);
      }
    })();
  }

  /**
   * `nextAt`: the first occurrence of any schedule after the time the pass looked at it, or the
   * end of a failed schedule's hold. `retryAfter` (the loop's): a schedule that fails is held
   * back from the passes that come sooner than this (ms); without it, every schedule is tried.
   */
  private async pass(retryAfter?: number): Promise<{
    published: PublishedOccurrence[];
    failures: ScheduleFailure[];
    nextAt: number;
  }> {
    const published: PublishedOccurrence[] = [];
    const failures: ScheduleFailure[] = [];
    let nextAt = Number.POSITIVE_INFINITY;
    const quiet = new Map<string, QuietSchedule>();
    const held = new Map<string, number>();
    let turnStart = performance.now();
    let sinceTurn = 0;
    for (const schedule of await this.engine.listSchedules()) {
      if (++sinceTurn > SCHEDULES_PER_TURN || performance.now() - turnStart >= MS_PER_TURN) {
        await nextTurn();
        turnStart = performance.now();
        sinceTurn = 1;
      }
      const now = this.clock.now();
      // Keyed by queue and name to keep one entry a schedule; a hit is checked on every field
      // the times depend on, so the schedule as read now decides, whoever changed it.
      const key = `${schedule.queue}\u0000${schedule.name}`;
      const until = retryAfter === undefined ? undefined : this.held.get(key);
      if (until !== undefined && now < until) {
        held.set(key, until);
        nextAt = Math.min(nextAt, until);
        continue;
      }
      const known = this.quiet.get(key);
      // `from <= now`: a clock set back recomputes.
      if (
        known !== undefined &&
        sameTimes(known, schedule) &&
        known.from <= now &&
        now < known.nextAt
      ) {
        quiet.set(key, known);
        nextAt = Math.min(nextAt, known.nextAt);
        continue;
      }
      try {
        // In the try: a schedule whose times this process cannot compute (a time zone its data
        // lacks, a definition stored by another version) fails alone, by its name.
        const next = nextOccurrence(schedule, now);
        const at = dueOccurrence(schedule, now);
        if (at === undefined) {
          const { cron, every, timezone, createdAt, lastAt } = schedule;
          quiet.set(key, { cron, every, timezone, createdAt, lastAt, from: now, nextAt: next });
          nextAt = Math.min(nextAt, next);
          continue;
        }
        const occurrence = await this.fire(schedule, now, at);
        if (occurrence !== undefined) published.push(occurrence);
        // Not for one that failed: its next try is its hold's end.
        nextAt = Math.min(nextAt, next);
      } catch (error) {
        failures.push({ queue: schedule.queue, name: schedule.name, error });
        if (retryAfter !== undefined) {
          held.set(key, now + retryAfter);
          nextAt = Math.min(nextAt, now + retryAfter);
        }
      }
    }
    this.quiet = quiet;
    if (retryAfter !== undefined) this.held = held;
    return { published, failures, nextAt };
  }

  /** Publishes the schedule's due occurrence `at` if this scheduler records it first. */
  private async fire(
    schedule: ScheduleRecord,
    now: number,
    at: number,
  ): Promise<PublishedOccurrence | undefined> {
    const id = occurrenceId(schedule.name, at);
    const input = { id, payload: schedule.payload };
    const { queue, name, lastAt } = schedule;
    let duplicate: boolean;
    // Only the scheduler whose compare and set moves lastAt publishes: the id alone would not
    // stop a second one once the first occurrence's job was acked and forgotten.
    if (this.engine.transaction !== undefined && this.engine.capabilities.transactions) {
      // Both in one transaction: no pass can record an occurrence and die before publishing it,
      // and a publish refused takes the record back with it.
      const result = await this.engine
        .transaction(async (tx) =>
          (await tx.advanceSchedule(schedule, at)) ? tx.publish(queue, now, input) : undefined,
        )
        .catch(gone);
      if (result === undefined) return undefined;
      duplicate = result.duplicate;
    } else {
      // One process (memory): what it records, it publishes, or it is gone with the process.
      if (!(await this.engine.advanceSchedule(schedule, at))) return undefined;
      try {
        ({ duplicate } = await this.publish(queue, input));
      } catch (error) {
        // Refused (queue full): the occurrence is not recorded either, so a later pass has it.
        await this.engine.advanceSchedule({ ...schedule, lastAt: at }, lastAt);
        return gone(error);
      }
    }
    return { queue, name, at, id, duplicate };
  }

  /**
   * Ends the loop of `start()`: resolves once a pass under way has finished. A stopped
   * scheduler does not start again.
   */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }
}

function sameTimes(known: QuietSchedule, schedule: ScheduleRecord): boolean {
  return (
    known.createdAt === schedule.createdAt &&
    known.lastAt === schedule.lastAt &&
    known.every === schedule.every &&
    known.cron === schedule.cron &&
    known.timezone === schedule.timezone
  );
}

/**
 * The queue of a schedule deleted during the pass (R25: its schedules went with it): nothing to
 * publish or report. Any other refusal is thrown on.
 */
function gone(error: unknown): undefined {
  if (error instanceof NotFoundError) return undefined;
  throw error;
}
