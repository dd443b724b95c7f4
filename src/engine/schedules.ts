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
  /** The schedules of `queue` (of every queue when undefined), by queue then name. */
  listSchedules(queue?: string): Promise<ScheduleRecord[]>;
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
