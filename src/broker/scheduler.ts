import { addUnknownOptions } from '../core/errors.js';
import { NotFoundError, QueueFullError, ValidationError } from '../core/index.js';
import { show } from '../core/validate.js';
import type { EngineTransaction } from '../engine/engine.js';
import type { Engine, ScheduleRecord } from '../engine/index.js';
import { nextTurn } from '../engine/next-turn.js';
import type { Clock } from './clock.js';
import { onAbort } from './on-abort.js';
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

/** A schedule a pass found due: the occurrence to publish, at the time it looked. */
interface DueSchedule {
  readonly schedule: ScheduleRecord;
  readonly key: string;
  readonly now: number;
  readonly at: number;
  /** Its first occurrence after `now`. */
  readonly next: number;
}

/** What became of a due schedule: published (or not, another scheduler first), or failed. */
type Fired = { occurrence: PublishedOccurrence | undefined } | { error: unknown };

/** A schedule whose times a pass could not compute, at the time it looked. */
interface UnreadSchedule {
  readonly schedule: ScheduleRecord;
  readonly key: string;
  readonly now: number;
  readonly error: unknown;
}

/**
 * A failed schedule held back by the loop: not tried by its passes at a time in [from, until).
 * A clock set back before `from` ends the hold, as it makes a quiet schedule be computed again:
 * the hold was an interval from a time that is no longer behind.
 */
interface Hold {
  readonly from: number;
  readonly until: number;
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

/**
 * The most occurrences a pass publishes in one transaction (SQL engines): a transaction holds
 * the rows of the queues it published into until it commits, and their receivers wait for it.
 */
const OCCURRENCES_PER_TRANSACTION = 100;

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
  private held = new Map<string, Hold>();

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
    /**
     * The close of the broker it publishes through: the loop of `start()` ends as it begins, as
     * a `stop()` would, since no pass could succeed again.
     */
    private readonly brokerClosing?: AbortSignal,
  ) {
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw new ValidationError('scheduler options must be an object, as { intervalMs: 1000 }');
    }
    const { intervalMs: interval, ...unknown } = options;
    const problems: string[] = [];
    // A misspelt option (`interval`) would otherwise leave the loop at the default, unsaid.
    addUnknownOptions(problems, Object.keys(unknown), () => false, {
      what: 'unknown scheduler option',
      describe: (shown) => `unknown scheduler option ${shown}: the option is intervalMs`,
    });
    // 0, a negative or NaN would make a loop of passes each listing every schedule.
    if (interval !== undefined && (!Number.isSafeInteger(interval) || interval < 1)) {
      problems.push(`intervalMs must be an integer ≥ 1 (ms between passes), got ${show(interval)}`);
    }
    if (problems.length > 0) throw new ValidationError(problems);
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
   * Runs passes until `stop()`, or until the broker it publishes through is closed. A schedule
   * that could not publish is reported to `onError` with its queue and name, a pass that could
   * not read the schedules without them; the loop goes on, whatever `onError` does (its failure
   * is its own).
   */
  start(onError: (error: unknown, schedule?: ScheduleRef) => void = () => {}): void {
    if (typeof onError !== 'function') {
      throw new ValidationError(`start: onError must be a function, got ${show(onError)}`);
    }
    if (this.loop !== undefined) return;
    const interval = this.options.intervalMs ?? 1000;
    const signal = this.stopping.signal;
    const closing = this.brokerClosing;
    // A broker closed (now or later) stops the loop: its passes would each fail with CLOSED, and
    // its sleeps keep the process alive.
    if (closing?.aborted) this.stopping.abort();
    const unwatch =
      closing === undefined || closing.aborted
        ? undefined
        : onAbort(closing, () => this.stopping.abort());
    const report = (error: unknown, schedule?: ScheduleRef) => {
      // What a pass the close cut short met is the close's doing, not the schedule's.
      if (closing?.aborted) return;
      try {
        if (schedule === undefined) onError(error);
        else onError(error, schedule);
      } catch {
        // A listener's failure is its own: the loop goes on.
      }
    };
    this.loop = (async () => {
      try {
        while (!signal.aborted) {
          let wait = interval;
          try {
            const { failures, nextAt } = await this.pass(interval);
            for (const { error, queue, name } of failures) report(error, { queue, name });
            // At the next occurrence, not an interval after this pass ended: an interval's sleep
            // after a pass that took time could pass over an occurrence, and only the latest due
            // one is published. So too while a schedule fails: it is held back until the
            // interval has passed (its time is in nextAt), the others are not.
            // Not sooner than MIN_PASS_GAP_MS: schedules at many phases would each bring a pass,
            // and each pass lists them all.
            const floor = Math.min(interval, MIN_PASS_GAP_MS);
            wait = Math.max(floor, Math.min(interval, nextAt - this.clock.now()));
          } catch (error) {
            report(error);
          }
          await this.clock.sleep(wait, signal);
        }
      } finally {
        unwatch?.();
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
    let nextAt = Number.POSITIVE_INFINITY;
    const quiet = new Map<string, QuietSchedule>();
    const held = new Map<string, Hold>();
    const due: DueSchedule[] = [];
    /** The due schedules and those whose times failed, as listed: the pass reports in that order. */
    const listed: (DueSchedule | UnreadSchedule)[] = [];
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
      const hold = retryAfter === undefined ? undefined : this.held.get(key);
      // `from <= now`: a clock set back ends the hold, as it recomputes a quiet schedule below.
      if (hold !== undefined && hold.from <= now && now < hold.until) {
        held.set(key, hold);
        nextAt = Math.min(nextAt, hold.until);
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
        const item = { schedule, key, now, at, next };
        due.push(item);
        listed.push(item);
      } catch (error) {
        listed.push({ schedule, key, now, error });
      }
    }
    const fired = new Map(zip(due, await this.fireAll(due)));
    const published: PublishedOccurrence[] = [];
    const failures: ScheduleFailure[] = [];
    for (const item of listed) {
      const outcome = 'error' in item ? item : (fired.get(item) as Fired);
      if ('error' in outcome) {
        const { schedule, key, now } = item;
        failures.push({ queue: schedule.queue, name: schedule.name, error: outcome.error });
        // Its next try is its hold's end, not its next occurrence.
        if (retryAfter !== undefined) {
          held.set(key, { from: now, until: now + retryAfter });
          nextAt = Math.min(nextAt, now + retryAfter);
        }
        continue;
      }
      if (outcome.occurrence !== undefined) published.push(outcome.occurrence);
      nextAt = Math.min(nextAt, (item as DueSchedule).next);
    }
    this.quiet = quiet;
    if (retryAfter !== undefined) this.held = held;
    return { published, failures, nextAt };
  }

  /**
   * Publishes the due occurrences of a pass. On the SQL engines, up to
   * OCCURRENCES_PER_TRANSACTION of them in one transaction: a transaction each made a pass of
   * three servers over one PostgreSQL with 100 schedules of every second last longer than a
   * second, and occurrences were passed over. A publish refused there (the queue full, or gone)
   * is taken back alone; any other failure rolls the transaction back, and each is then tried
   * in its own, so that only the faulty one fails.
   */
  private async fireAll(due: readonly DueSchedule[]): Promise<Fired[]> {
    const fired: Fired[] = [];
    for (let start = 0; start < due.length; start += OCCURRENCES_PER_TRANSACTION) {
      fired.push(
        ...(await this.fireTogether(due.slice(start, start + OCCURRENCES_PER_TRANSACTION))),
      );
    }
    return fired;
  }

  /** Up to OCCURRENCES_PER_TRANSACTION of fireAll: in one transaction where it can. */
  private async fireTogether(due: readonly DueSchedule[]): Promise<Fired[]> {
    const { engine } = this;
    if (due.length > 1 && engine.transaction !== undefined && engine.capabilities.transactions) {
      const together = await engine
        .transaction(async (tx) => {
          // Claimed in one statement where the storage can: a scheduler whose pass comes second
          // finds them all taken at once, rather than one round trip each.
          const moved = await tx.advanceSchedules?.(
            due.map((item) => ({ read: item.schedule, to: item.at })),
          );
          const fired: Fired[] = [];
          for (const [index, item] of due.entries()) {
            fired.push(await this.fireIn(tx, item, moved?.[index]));
          }
          return fired;
        })
        .catch(() => undefined);
      if (together !== undefined) return together;
    }
    const fired: Fired[] = [];
    for (const { schedule, now, at } of due) {
      fired.push(
        await this.fire(schedule, now, at).then(
          (occurrence) => ({ occurrence }),
          (error: unknown) => ({ error }),
        ),
      );
    }
    return fired;
  }

  /** `fire` in a transaction of several: a refused publish takes back its own record only. */
  private async fireIn(
    tx: EngineTransaction,
    item: Pick<DueSchedule, 'schedule' | 'now' | 'at'>,
    moved?: boolean,
  ): Promise<Fired> {
    const { schedule, now, at } = item;
    const { queue, name, lastAt } = schedule;
    if (!(moved ?? (await tx.advanceSchedule(schedule, at)))) return { occurrence: undefined };
    const id = occurrenceId(name, at);
    try {
      const { duplicate } = await tx.publish(queue, now, { id, payload: schedule.payload });
      return { occurrence: { queue, name, at, id, duplicate } };
    } catch (error) {
      // A refusal (the queue full, or deleted since the pass listed it) is checked before the
      // publish writes anything: the transaction goes on without this occurrence, which stays
      // due. Any other error may have ended the transaction: it rolls it all back.
      if (!(error instanceof QueueFullError || error instanceof NotFoundError)) throw error;
      if (!(await tx.advanceSchedule({ ...schedule, lastAt: at }, lastAt))) throw error;
      return error instanceof NotFoundError ? { occurrence: undefined } : { error };
    }
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
      // Both in one transaction: no pass can record an occurrence and die before publishing it.
      // A publish refused takes its record back and commits, its refusal counted (R31).
      const fired = await this.engine
        .transaction((tx) => this.fireIn(tx, { schedule, now, at }))
        .catch(gone);
      if (fired === undefined) return undefined;
      if ('error' in fired) throw fired.error;
      return fired.occurrence;
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

function zip<A, B>(left: readonly A[], right: readonly B[]): [A, B][] {
  return left.map((value, index) => [value, right[index] as B]);
}

/**
 * The queue of a schedule deleted during the pass (R25: its schedules went with it): nothing to
 * publish or report. Any other refusal is thrown on.
 */
function gone(error: unknown): undefined {
  if (error instanceof NotFoundError) return undefined;
  throw error;
}
