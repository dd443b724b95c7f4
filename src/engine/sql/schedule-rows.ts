import { byCodeUnits } from '../../core/index.js';
import type { ScheduleRecord } from '../schedules.js';
import type { SqlConnection, SqlDialect } from './sql-connection.js';

interface ScheduleRow {
  queue: string;
  name: string;
  spec: string;
  created_at: number | string;
  last_at: number | string | null;
}

/** What a schedule is, beyond its name and times, as one JSON column. */
interface ScheduleSpec {
  cron?: string;
  every?: number;
  timezone?: string;
  payload?: unknown;
}

/** The stored text of a schedule's definition. */
function specText(schedule: ScheduleRecord): string {
  const spec: ScheduleSpec = {
    ...(schedule.cron === undefined ? {} : { cron: schedule.cron }),
    ...(schedule.every === undefined ? {} : { every: schedule.every }),
    ...(schedule.timezone === undefined ? {} : { timezone: schedule.timezone }),
    ...(schedule.payload === undefined ? {} : { payload: schedule.payload }),
  };
  return JSON.stringify(spec);
}

/**
 * Creates or replaces a schedule (R25); a replaced one keeps the occurrence published last, and
 * one set again with the same definition stays as it is (its createdAt too).
 */
export async function putScheduleRow(
  connection: SqlConnection,
  schedule: ScheduleRecord,
): Promise<void> {
  await connection.run(
    `INSERT INTO leaseq_schedules (queue, name, spec, created_at, last_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (queue, name) DO UPDATE SET spec = excluded.spec, created_at = excluded.created_at
     WHERE leaseq_schedules.spec <> excluded.spec`,
    [schedule.queue, schedule.name, specText(schedule), schedule.createdAt, schedule.lastAt],
  );
}

export async function listScheduleRows(
  connection: SqlConnection,
  queue: string | undefined,
): Promise<ScheduleRecord[]> {
  const rows =
    queue === undefined
      ? await connection.query<ScheduleRow>(
          'SELECT queue, name, spec, created_at, last_at FROM leaseq_schedules ORDER BY queue, name',
        )
      : await connection.query<ScheduleRow>(
          `SELECT queue, name, spec, created_at, last_at FROM leaseq_schedules WHERE queue = ?
           ORDER BY name`,
          [queue],
        );
  rows.sort((a, b) => byCodeUnits(a.queue, b.queue) || byCodeUnits(a.name, b.name));
  return rows.map((row) => {
    const spec = JSON.parse(row.spec) as ScheduleSpec;
    return {
      queue: row.queue,
      name: row.name,
      cron: spec.cron,
      every: spec.every,
      timezone: spec.timezone,
      payload: spec.payload,
      createdAt: Number(row.created_at),
      lastAt: row.last_at === null ? null : Number(row.last_at),
      stored: row.spec,
    };
  });
}

export async function removeScheduleRow(
  connection: SqlConnection,
  queue: string,
  name: string,
): Promise<boolean> {
  return (
    (await connection.run('DELETE FROM leaseq_schedules WHERE queue = ? AND name = ?', [
      queue,
      name,
    ])) > 0
  );
}

/**
 * Compare and set of last_at, on the definition read too: one of several schedulers wins each
 * occurrence, and a schedule replaced since it was read is not advanced.
 */
export async function advanceScheduleRow(
  connection: SqlConnection,
  dialect: SqlDialect,
  read: ScheduleRecord,
  to: number | null,
): Promise<boolean> {
  const { queue, name, lastAt, createdAt } = read;
  // The text read, as it is stored (written by any version or tool), else as this code writes it.
  const spec = read.stored ?? specText(read);
  const definition = 'queue = ? AND name = ? AND created_at = ? AND spec = ?';
  const where = `${definition} AND ${lastAt === null ? 'last_at IS NULL' : 'last_at = ?'}`;
  const params = [queue, name, createdAt, spec, ...(lastAt === null ? [] : [lastAt])];
  // A row another transaction holds is another scheduler at this occurrence (or a replace of
  // the schedule): passed over, not waited for; if the holder rolls back, the occurrence stays
  // due for the next pass. Waiting, a pass hung behind any transaction that held a schedule
  // (a psql session), and schedulers over one database took the schedules in turn.
  const changed = await connection.run(
    dialect.skipLocked === undefined
      ? `UPDATE leaseq_schedules SET last_at = ? WHERE ${where}`
      : `UPDATE leaseq_schedules SET last_at = ? WHERE (queue, name) IN
         (SELECT queue, name FROM leaseq_schedules WHERE ${where}${dialect.skipLocked})`,
    [to, ...params],
  );
  return changed > 0;
}
