import { byCodeUnits, decodePayload, encodePayload } from '../../core/index.js';
import { nextTurn } from '../next-turn.js';
import { type ScheduleRecord, type ScheduleStore, sameScheduleDefinition } from '../schedules.js';

/** The most schedules listSchedules copies between two turns of the event loop. */
const COPIES_PER_TURN = 500;

/** A copy through JSON, as the SQL engines keep a payload: the caller's object stays its own. */
function copied(payload: unknown): unknown {
  return decodePayload(encodePayload(payload, 'schedule'));
}

/** Schedules in this process's memory (R25), keyed by queue and name. */
export class MemorySchedules implements ScheduleStore {
  private readonly byKey = new Map<string, ScheduleRecord>();

  async putSchedule(schedule: ScheduleRecord): Promise<void> {
    const key = keyOf(schedule.queue, schedule.name);
    const stored = this.byKey.get(key);
    // The same definition set again (a deploy setting its schedules at every start), however
    // spelt, changes nothing: an interval keeps its phase, a due occurrence stays due.
    if (stored !== undefined && sameScheduleDefinition(stored, schedule)) return;
    const lastAt = stored?.lastAt ?? schedule.lastAt;
    this.byKey.set(key, { ...schedule, lastAt, payload: copied(schedule.payload) });
  }

  async listSchedules(queue?: string, name?: string): Promise<ScheduleRecord[]> {
    if (queue !== undefined && name !== undefined) {
      const schedule = this.byKey.get(keyOf(queue, name));
      return schedule === undefined ? [] : [{ ...schedule, payload: copied(schedule.payload) }];
    }
    // The records as they are now (each set or advance stores a new one), copied in steps with
    // the event loop turning between them: a copy of 100,000 payloads (each scheduler pass
    // lists them all) held the process for 60–110 ms.
    const listed = [...this.byKey.values()]
      .filter((schedule) => queue === undefined || schedule.queue === queue)
      .sort((a, b) => byCodeUnits(a.queue, b.queue) || byCodeUnits(a.name, b.name));
    const copies: ScheduleRecord[] = [];
    for (const schedule of listed) {
      if (copies.length > 0 && copies.length % COPIES_PER_TURN === 0) await nextTurn();
      copies.push({ ...schedule, payload: copied(schedule.payload) });
    }
    return copies;
  }

  async removeSchedule(queue: string, name: string): Promise<boolean> {
    return this.byKey.delete(keyOf(queue, name));
  }

  async advanceSchedule(read: ScheduleRecord, to: number | null): Promise<boolean> {
    const key = keyOf(read.queue, read.name);
    const schedule = this.byKey.get(key);
    if (schedule === undefined || !sameRecord(schedule, read)) return false;
    this.byKey.set(key, { ...schedule, lastAt: to });
    return true;
  }

  /** Every schedule of a deleted queue goes with it. */
  forgetQueue(queue: string): void {
    for (const [key, schedule] of this.byKey) if (schedule.queue === queue) this.byKey.delete(key);
  }
}

/**
 * The same lastAt and definition, set at the same time: field by field, as read (a put of
 * another spelling of its definition leaves the stored one as it was).
 */
function sameRecord(stored: ScheduleRecord, read: ScheduleRecord): boolean {
  return (
    stored.lastAt === read.lastAt &&
    stored.createdAt === read.createdAt &&
    stored.cron === read.cron &&
    stored.every === read.every &&
    stored.timezone === read.timezone &&
    encodePayload(stored.payload, 'schedule') === encodePayload(read.payload, 'schedule')
  );
}

function keyOf(queue: string, name: string): string {
  return `${queue}\u0000${name}`;
}
