import { Cron } from 'croner';
import { addUnknownOptions } from '../core/errors.js';
import { encodePayload, QUEUE_NAME, ValidationError } from '../core/index.js';
import { show } from '../core/validate.js';
import type { ScheduleRecord } from '../engine/index.js';

/** When a schedule fires: a cron expression (string) or an interval in ms (number). */
export type ScheduleWhen = string | number;

/** Options of `Queue.schedule`; `P` is the payload's type as the queue declares it. */
export interface ScheduleOptions<P = unknown> {
  /** The payload of every occurrence's job (JSON). */
  payload?: P;
  /** IANA time zone a cron expression is read in (e.g. 'Europe/Paris'). Default UTC. */
  timezone?: string;
}

/** A schedule as users see it (R25). Times in ms. `P` as in ScheduleOptions. */
export interface ScheduleView<P = unknown> {
  /** The schedule's name, unique within its queue. */
  name: string;
  /** The queue its occurrences are published into. */
  queue: string;
  /** The cron expression (5 or 6 fields); absent when `every` is set. */
  cron?: string;
  /** The interval between occurrences, counted from `createdAt` (ms); absent with `cron`. */
  every?: number;
  /** The IANA time zone `cron` is read in; absent means UTC. */
  timezone?: string;
  /** The payload of every occurrence's job; absent when there is none. */
  payload?: P;
  /** When the schedule was set: only occurrences after it are published. */
  createdAt: number;
  /** The occurrence published last; absent before the first. */
  lastAt?: number;
  /**
   * The next occurrence to be published: the first after `now`, `createdAt` and `lastAt` (those
   * two may be ahead of a clock behind the one that set the schedule or published it);
   * Number.MAX_SAFE_INTEGER for none (a cron that never fires, or one whose times cannot be
   * computed here: see `problem`).
   */
  nextAt: number;
  /**
   * Why this process cannot compute the schedule's times (a time zone its data lacks, stored by
   * a process whose data has it, or a definition stored by another version). The schedulers
   * report it at each pass rather than publish it; set it again, or remove it.
   */
  problem?: string;
}

/** The latest time a Date holds (ms): an occurrence must be one. */
const LATEST_TIME = 8.64e15;

/** What is wrong with a schedule's name (R25: a name like a queue's), if anything. */
function scheduleNameProblem(name: unknown): string | undefined {
  return typeof name === 'string' && QUEUE_NAME.test(name)
    ? undefined
    : `schedule name must be 1 to 80 characters of letters, digits, '_', '-' or '.', starting with a letter or digit; got ${show(name)}`;
}

/** A schedule's name, or a ValidationError saying what it must be. */
export function checkScheduleName(name: unknown): asserts name is string {
  const problem = scheduleNameProblem(name);
  if (problem !== undefined) throw new ValidationError(problem);
}

/**
 * The longest cron expression a schedule takes (R25): beyond any real one (every value of all
 * six fields listed one by one is 526 characters), and short enough that a list of schedules
 * stays small.
 */
export const MAX_CRON_LENGTH = 1024;

/** Checks a schedule's definition; every problem named at once (a ValidationError). */
export function scheduleRecord(
  queue: string,
  name: unknown,
  when: unknown,
  options: ScheduleOptions | undefined,
  now: number,
): ScheduleRecord {
  const problems: string[] = [];
  const wrongName = scheduleNameProblem(name);
  if (wrongName !== undefined) problems.push(wrongName);
  // As every other call's options: a string (a time zone given as the third argument) would
  // otherwise be read as one unknown option per character, and a number or array as none.
  const isObject = typeof options === 'object' && options !== null && !Array.isArray(options);
  if (options !== undefined && !isObject) {
    problems.push(
      `schedule options must be an object, as { payload, timezone }, got ${show(options)}`,
    );
  }
  const { payload, timezone, ...unknown } = isObject ? options : {};
  addUnknownOptions(problems, Object.keys(unknown), () => false, {
    what: 'unknown schedule option',
    quote: false,
  });
  if (timezone !== undefined && (typeof timezone !== 'string' || !isTimeZone(timezone))) {
    problems.push(`timezone must be an IANA time zone name, got ${show(timezone)}`);
  }
  let cron: string | undefined;
  let every: number | undefined;
  if (typeof when === 'number') {
    if (!Number.isInteger(when) || when < 1000) {
      problems.push(`every must be an integer of at least 1000 ms, got ${when}`);
    } else if (!Number.isSafeInteger(when) || now + when > LATEST_TIME) {
      // A whole number too large to be exact (2 ** 60, 1e300) is one of at least 1000: what it
      // exceeds is the longest interval, as a safe integer beyond it does.
      problems.push(
        `every must be at most ${LATEST_TIME - now} ms (its first occurrence a time a date can hold), got ${when}`,
      );
    }
    if (timezone !== undefined) problems.push('timezone goes with a cron expression, not every');
    every = when;
  } else if (typeof when === 'string') {
    const fields = when.trim().split(/\s+/).length;
    if (when.length > MAX_CRON_LENGTH) {
      // Not echoed: the message would be as long as the text. Counted as R18 counts text, in
      // UTF-16 code units, which the message says where that is not the count of characters.
      // The string's iterator goes by code points: a surrogate pair is one character.
      const characters = [...when].length;
      const counted =
        characters === when.length
          ? `${when.length}`
          : `${when.length} (in UTF-16 code units, where an emoji counts two: ${characters} characters)`;
      problems.push(
        `cron must be at most ${MAX_CRON_LENGTH} characters, got ${counted} starting ${JSON.stringify(wholeStart(when, 40))}`,
      );
    } else if (fields !== 5 && fields !== 6) {
      // R25's form: croner would take a seventh field (a year) and nicknames too.
      problems.push(`cron ${JSON.stringify(when)} must have 5 or 6 fields, got ${fields}`);
    } else {
      // Only a cron of R25's form is parsed: croner's words for another count (it takes
      // seven fields) would contradict the one above.
      try {
        const cron = cronFor(when, isTimeZone(timezone) ? timezone : undefined);
        // A date no calendar has (31 February) parses, and would be stored to fire never.
        if (cron.nextRun(new Date(now)) === null) {
          problems.push(`cron ${JSON.stringify(when)} names no time to come: it would never fire`);
        }
      } catch (error) {
        problems.push(
          `cron ${JSON.stringify(when)} is not a cron expression: ${(error as Error).message}`,
        );
      }
    }
    cron = when;
  } else {
    problems.push(`when must be a cron expression or an interval in ms, got ${typeof when}`);
  }
  if (payload !== undefined) {
    // The check a publish makes: every occurrence publishes it.
    try {
      encodePayload(payload, 'schedule');
    } catch (error) {
      problems.push(error instanceof Error ? error.message : 'payload must be JSON');
    }
  }
  if (problems.length > 0) throw new ValidationError(problems);
  return {
    queue,
    name: name as string,
    cron,
    every,
    timezone,
    payload,
    createdAt: now,
    lastAt: null,
  };
}

/** The first `units` UTF-16 code units of `text`, one fewer where that would split a pair. */
function wholeStart(text: string, units: number): string {
  const last = text.charCodeAt(units - 1);
  const next = text.charCodeAt(units);
  const splits = last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff;
  return text.slice(0, splits ? units - 1 : units);
}

function isTimeZone(zone: unknown): zone is string {
  if (typeof zone !== 'string') return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * How many parsed crons are kept: building one takes ~0.15 ms of CPU (croner fills a table of
 * 10,000 years) and keeping one ~80 kB. Schedules mostly share a few definitions, and a
 * scheduler pass recomputes the times of only the schedules that changed or came due.
 */
const CRONS_KEPT = 64;

/** Parsed crons by definition, the least recently used first. */
const crons = new Map<string, Cron>();

/**
 * The parsed cron of a definition, built once while it is used. A paused Cron without a job
 * keeps no state across nextRun and previousRuns, so one serves every schedule of its definition.
 */
function cronFor(expression: string, timezone: string | undefined): Cron {
  const key = JSON.stringify([expression, timezone ?? null]);
  let cron = crons.get(key);
  if (cron === undefined) {
    // No zone is UTC (R25), named: croner reads a cron without one in the process's zone.
    cron = new Cron(expression, { paused: true, timezone: timezone ?? 'UTC' });
    const oldest = crons.keys().next();
    if (crons.size >= CRONS_KEPT && oldest.done !== true) crons.delete(oldest.value);
  } else {
    crons.delete(key);
  }
  crons.set(key, cron);
  return cron;
}

function cronOf(schedule: ScheduleRecord): Cron {
  return cronFor(schedule.cron as string, schedule.timezone);
}

/**
 * The occurrence to publish at `now`, if any: the latest one at or before `now` that is after
 * both the schedule's creation and the occurrence published last. Earlier missed occurrences
 * are skipped (R25: after downtime, one catch-up run, not a burst).
 */
export function dueOccurrence(schedule: ScheduleRecord, now: number): number | undefined {
  const after = Math.max(schedule.createdAt, schedule.lastAt ?? Number.NEGATIVE_INFINITY);
  let latest: number | undefined;
  if (schedule.every !== undefined) {
    const k = Math.floor((now - schedule.createdAt) / schedule.every);
    latest = k >= 1 ? schedule.createdAt + k * schedule.every : undefined;
  } else {
    // Cron has whole seconds: one second past `now` makes an occurrence at `now` count.
    latest = cronOf(schedule)
      .previousRuns(1, new Date(now + 1000))[0]
      ?.getTime();
    if (latest !== undefined && latest > now) latest = undefined;
  }
  return latest !== undefined && latest > after ? latest : undefined;
}

/**
 * The next occurrence a pass may publish: the first after `now` that is after both the
 * schedule's creation and the occurrence published last, as dueOccurrence counts them. Those
 * are after `now` where another process's clock runs ahead of this one's (it set the schedule,
 * or published an occurrence, at a time this clock has not reached), or where this clock was
 * set back: the occurrences up to them are never published, so none is next.
 */
export function nextOccurrence(schedule: ScheduleRecord, now: number): number {
  const from = Math.max(now, schedule.createdAt, schedule.lastAt ?? Number.NEGATIVE_INFINITY);
  if (schedule.every !== undefined) {
    const k = Math.max(1, Math.floor((from - schedule.createdAt) / schedule.every) + 1);
    return schedule.createdAt + k * schedule.every;
  }
  return cronOf(schedule).nextRun(new Date(from))?.getTime() ?? Number.MAX_SAFE_INTEGER;
}

/** The job id of one occurrence: the schedule's name and the occurrence's time (idempotent). */
export function occurrenceId(name: string, at: number): string {
  return `${name}@${new Date(at).toISOString()}`;
}

export function scheduleView(schedule: ScheduleRecord, now: number): ScheduleView {
  // One schedule this process cannot read shows so, rather than failing its queue's list.
  let nextAt: number;
  let problem: string | undefined;
  try {
    nextAt = nextOccurrence(schedule, now);
  } catch (error) {
    nextAt = Number.MAX_SAFE_INTEGER;
    problem = `its times cannot be computed here: ${(error as Error).message ?? String(error)}`;
  }
  return {
    name: schedule.name,
    queue: schedule.queue,
    ...(schedule.cron === undefined ? {} : { cron: schedule.cron }),
    ...(schedule.every === undefined ? {} : { every: schedule.every }),
    ...(schedule.timezone === undefined ? {} : { timezone: schedule.timezone }),
    ...(schedule.payload === undefined ? {} : { payload: schedule.payload }),
    createdAt: schedule.createdAt,
    ...(schedule.lastAt === null ? {} : { lastAt: schedule.lastAt }),
    nextAt,
    ...(problem === undefined ? {} : { problem }),
  };
}
