import { encodePayload } from '../core/index.js';

/**
 * A periodic job as the engine keeps it (R25): what to publish into which queue, when, and the
 * time of the last occurrence published. Times are the broker's milliseconds.
 */
export interface ScheduleRecord {
  /** The queue its occurrences are published into. */
  readonly queue: string;
  /** The schedule's name, unique within its queue. */
  readonly name: string;
  /** A cron expression (5 or 6 fields), or undefined when `every` is set. */
  readonly cron: string | undefined;
  /** Milliseconds between occurrences, counted from `createdAt`; or undefined with `cron`. */
  readonly every: number | undefined;
  /** IANA time zone the cron expression is read in; undefined means UTC. */
  readonly timezone: string | undefined;
  /** The payload of every occurrence's job (JSON); undefined for none. */
  readonly payload: unknown;
  /** When the schedule was set: no occurrence at or before it is published. */
  readonly createdAt: number;
  /** The occurrence published last, or null before the first. */
  readonly lastAt: number | null;
  /**
   * The definition as the storage holds it, where it keeps one (the SQL engines' JSON text),
   * on a record listed from it: advanceSchedule names it, whatever wrote it.
   */
  readonly stored?: string;
}

/** What the engines store for schedules; every engine keeps them (memory: in this process). */
export interface ScheduleStore {
  /** Creates or replaces the schedule `queue`/`name` (its lastAt is kept when replaced). */
  putSchedule(schedule: ScheduleRecord): Promise<void>;
  /**
   * The schedules of `queue` (of every queue when undefined), by queue then name; with `name`,
   * that one only (an engine may ignore `name` and list the queue's: callers pick it out).
   */
  listSchedules(queue?: string, name?: string): Promise<ScheduleRecord[]>;
  /** Removes one; false when there was none. */
  removeSchedule(queue: string, name: string): Promise<boolean>;
  /**
   * Moves the stored lastAt from `read.lastAt` to `to` only if the stored schedule is still the
   * one read: the same lastAt and the same definition (cron, every, timezone, payload,
   * createdAt). A compare and set: of several schedulers one wins each occurrence, and none
   * publishes an occurrence of a definition replaced after it read it. False otherwise. (Back
   * to `null` too: a scheduler without transactions takes back an occurrence it could not publish.)
   */
  advanceSchedule(read: ScheduleRecord, to: number | null): Promise<boolean>;
}

/**
 * Names of the time zone UTC (IANA's links to Etc/UTC and Etc/GMT, whose times are UTC's), in
 * lower case: each means what no time zone does. Named here rather than left to Intl, which
 * names some by themselves (Etc/UTC) in newer versions.
 */
const UTC_NAMES: ReadonlySet<string> = new Set(
  [
    'UTC',
    'Etc/UTC',
    'UCT',
    'Etc/UCT',
    'Universal',
    'Etc/Universal',
    'Zulu',
    'Etc/Zulu',
    'GMT',
    'Etc/GMT',
    'GMT0',
    'Etc/GMT0',
    'GMT+0',
    'Etc/GMT+0',
    'GMT-0',
    'Etc/GMT-0',
    'Greenwich',
    'Etc/Greenwich',
  ].map((name) => name.toLowerCase()),
);

/** A time zone as it means: UTC for none or any name of UTC, else the name Intl gives it. */
function zoneMeaning(timezone: string | undefined): string {
  if (timezone === undefined || UTC_NAMES.has(timezone.toLowerCase())) return 'UTC';
  try {
    // Its name in Intl's case and, where Intl follows a link, the zone it links to.
    const resolved = new Intl.DateTimeFormat('en', { timeZone: timezone }).resolvedOptions();
    return UTC_NAMES.has(resolved.timeZone.toLowerCase()) ? 'UTC' : resolved.timeZone;
  } catch {
    // Unknown to this process (its time zone data lacks it): only the same name is the same.
    return timezone;
  }
}

/** Month and weekday names as the cron parser reads them (croner: `replaceAlpha`), in order. */
const MONTH_NUMBERS = 'jan feb mar apr may jun jul aug sep oct nov dec'
  .split(' ')
  .map((name, index): [string, string] => [name, String(index + 1)]);
const DAY_NUMBERS: [string, string][] = [
  // A range ending on Sunday is a range to 7.
  ['-sun', '-7'],
  ...'sun mon tue wed thu fri sat'
    .split(' ')
    .map((name, index): [string, string] => [name, String(index)]),
];

function numbered(field: string, names: readonly [string, string][]): string {
  let numbers = field;
  for (const [name, number] of names) numbers = numbers.replaceAll(name, number);
  return numbers;
}

/**
 * A cron expression as the cron parser reads it: fields split on any run of spaces, the seconds
 * field of a 5-field one 0, letters in one case (names, L and W are read in any), `?` as `*`,
 * and month and weekday names as their numbers.
 */
function cronMeaning(cron: string): string {
  const fields = cron.trim().toLowerCase().split(/\s+/);
  if (fields.length === 5) fields.unshift('0');
  return fields
    .map((field, index) => {
      const starred = field.replaceAll('?', '*');
      if (index === 4) return numbered(starred, MONTH_NUMBERS);
      if (index === 5) return numbered(starred, DAY_NUMBERS);
      return starred;
    })
    .join(' ');
}

/**
 * The JSON text of a value read from JSON, the keys of each object in one order (JSON's objects
 * have none). Written without recursion: a payload a publish takes may be nested thousands of
 * levels deep, deeper than a recursive walk (or JSON.stringify of a tree made again) can go.
 */
function keysSortedJson(value: unknown): string {
  const parts: string[] = [];
  // Texts to write as they are, and values to write, in the order they are taken off the end.
  const stack: (string | { value: unknown })[] = [{ value }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (typeof item === 'string') {
      parts.push(item);
      continue;
    }
    const current = item.value;
    if (current === null || typeof current !== 'object') {
      parts.push(JSON.stringify(current));
    } else if (Array.isArray(current)) {
      parts.push('[');
      stack.push(']');
      for (let index = current.length - 1; index >= 0; index--) {
        stack.push({ value: current[index] });
        if (index > 0) stack.push(',');
      }
    } else {
      parts.push('{');
      stack.push('}');
      const entries = Object.entries(current).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      for (let index = entries.length - 1; index >= 0; index--) {
        const [key, member] = entries[index] as [string, unknown];
        stack.push({ value: member });
        stack.push(`${JSON.stringify(key)}:`);
        if (index > 0) stack.push(',');
      }
    }
  }
  return parts.join('');
}

/** A payload as its job's JSON means it: the same text for the same keys in another order. */
function payloadMeaning(payload: unknown): string | null {
  const text = encodePayload(payload, 'schedule');
  return text === null ? null : keysSortedJson(JSON.parse(text));
}

/** What a schedule's definition means, as one text: equal for any two spellings of one. */
function definitionMeaning(schedule: ScheduleRecord): string {
  return JSON.stringify([
    schedule.cron === undefined ? null : cronMeaning(schedule.cron),
    schedule.every ?? null,
    schedule.cron === undefined ? null : zoneMeaning(schedule.timezone),
    payloadMeaning(schedule.payload),
  ]);
}

/**
 * Whether two schedules have the same definition (R25: set again with it, a schedule stays as it
 * is): the same times, however spelt (`timezone: 'UTC'` or none, a cron with other spaces or
 * its seconds field 0 given), and the same payload as JSON (its objects' keys in any order).
 */
export function sameScheduleDefinition(stored: ScheduleRecord, given: ScheduleRecord): boolean {
  return definitionMeaning(stored) === definitionMeaning(given);
}
