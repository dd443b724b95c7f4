import { byCodeUnits } from '../../core/index.js';
import type { ScheduleRecord } from '../schedules.js';
import type { SqlConnection } from './sql-connection.js';

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

/** Creates or replaces a schedule (R25); a replaced one keeps the occurrence published last. */
export async function putScheduleRow(
  connection: SqlConnection,
  schedule: ScheduleRecord,
): Promise<void> {
  const spec: ScheduleSpec = {
    ...(schedule.cron === undefined ? {} : { cron: schedule.cron }),
    ...(schedule.every === undefined ? {} : { every: schedule.every }),
    ...(schedule.timezone === undefined ? {} : { timezone: schedule.timezone }),
    ...(schedule.payload === undefined ? {} : { payload: schedule.payload }),
  };
  await connection.run(
    `INSERT INTO leaseq_schedules (queue, name, spec, created_at, last_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (queue, name) DO UPDATE SET spec = excluded.spec, created_at = excluded.created_at`,
    [schedule.queue, schedule.name, JSON.stringify(spec), schedule.createdAt, schedule.lastAt],
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

/** Compare and set of last_at: one of several schedulers wins each occurrence. */
export async function advanceScheduleRow(
  connection: SqlConnection,
  queue: string,
  name: string,
  from: number | null,
  to: number | null,
): Promise<boolean> {
  const changed =
    from === null
      ? await connection.run(
          'UPDATE leaseq_schedules SET last_at = ? WHERE queue = ? AND name = ? AND last_at IS NULL',
          [to, queue, name],
        )
      : await connection.run(
          'UPDATE leaseq_schedules SET last_at = ? WHERE queue = ? AND name = ? AND last_at = ?',
          [to, queue, name, from],
        );
  return changed > 0;
}
