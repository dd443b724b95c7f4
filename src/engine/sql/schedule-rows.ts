import { byCodeUnits } from '../../core/index.js';
import type { ScheduleMove } from '../engine.js';
import { type ScheduleRecord, sameScheduleDefinition } from '../schedules.js';
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
 * one set again with the same definition, however spelt, stays as it is (its createdAt too).
 * The caller holds the queue's name (a replace of the row read here waits for it).
 */
export async function putScheduleRow(
  connection: SqlConnection,
  schedule: ScheduleRecord,
): Promise<void> {
  const [stored] = await connection.query<{ spec: string }>(
    'SELECT spec FROM leaseq_schedules WHERE queue = ? AND name = ?',
    [schedule.queue, schedule.name],
  );
  // Compared by meaning, not as text: another spelling (UTC named, other spaces in the cron,
  // keys in another order, as a restore or another version may write them) is the same.
  if (stored !== undefined && sameScheduleDefinition(fromSpec(stored.spec), schedule)) return;
  await connection.run(
    `INSERT INTO leaseq_schedules (queue, name, spec, created_at, last_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (queue, name) DO UPDATE SET spec = excluded.spec, created_at = excluded.created_at
     WHERE leaseq_schedules.spec <> excluded.spec`,
    [schedule.queue, schedule.name, specText(schedule), schedule.createdAt, schedule.lastAt],
  );
}

/** A definition from its stored text: the fields sameScheduleDefinition compares. */
function fromSpec(text: string): ScheduleRecord {
  const spec = JSON.parse(text) as ScheduleSpec;
  return {
    queue: '',
    name: '',
    cron: spec.cron,
    every: spec.every,
    timezone: spec.timezone,
    payload: spec.payload,
    createdAt: 0,
    lastAt: null,
  };
}

/** The schedule `queue`/`name`, in a list of none or one. */
export async function listScheduleRow(
  connection: SqlConnection,
  queue: string,
  name: string,
): Promise<ScheduleRecord[]> {
  return recordsOf(
    await connection.query<ScheduleRow>(
      'SELECT queue, name, spec, created_at, last_at FROM leaseq_schedules WHERE queue = ? AND name = ?',
      [queue, name],
    ),
  );
}

/** Where a page of every schedule begins: after this queue and name (none: the first). */
export interface SchedulePlace {
  readonly queue: string;
  readonly name: string;
}

/**
 * A page of every schedule (of `queue` only, when given): the first `limit` after `after`, in
 * the storage's order of queue and name (not sorted in code units: a caller reading every page
 * sorts them all), and where the next page begins, undefined after the last.
 */
export async function listScheduleRowsPage(
  connection: SqlConnection,
  after: SchedulePlace | undefined,
  limit: number,
  queue?: string,
): Promise<{ records: ScheduleRecord[]; next: SchedulePlace | undefined }> {
  const columns = 'SELECT queue, name, spec, created_at, last_at FROM leaseq_schedules';
  let rows: ScheduleRow[];
  if (queue !== undefined) {
    // One queue: its names in order, which the (queue, name) key serves.
    rows =
      after === undefined
        ? await connection.query<ScheduleRow>(`${columns} WHERE queue = ? ORDER BY name LIMIT ?`, [
            queue,
            limit,
          ])
        : await connection.query<ScheduleRow>(
            `${columns} WHERE queue = ? AND name > ? ORDER BY name LIMIT ?`,
            [queue, after.name, limit],
          );
  } else {
    rows =
      after === undefined
        ? await connection.query<ScheduleRow>(`${columns} ORDER BY queue, name LIMIT ?`, [limit])
        : await connection.query<ScheduleRow>(
            `${columns} WHERE (queue, name) > (?, ?) ORDER BY queue, name LIMIT ?`,
            [after.queue, after.name, limit],
          );
  }
  const last = rows.at(-1);
  return {
    records: recordsOf(rows, false),
    next:
      rows.length < limit || last === undefined
        ? undefined
        : { queue: last.queue, name: last.name },
  };
}

function recordsOf(rows: ScheduleRow[], sort = true): ScheduleRecord[] {
  if (sort) rows.sort((a, b) => byCodeUnits(a.queue, b.queue) || byCodeUnits(a.name, b.name));
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

/**
 * The most moves advanceScheduleRows puts in one statement: six parameters each, 3,000 in all,
 * far below what SQLite (32,766) and PostgreSQL (65,535) take in a statement.
 */
const MOVES_PER_STATEMENT = 500;

/**
 * advanceScheduleRow of many schedules, in one statement for each MOVES_PER_STATEMENT of them:
 * each row still the one read moves to its `to`; rows another transaction holds are passed over
 * (SKIP LOCKED where the dialect has it). Whether each moved, in order.
 */
export async function advanceScheduleRows(
  connection: SqlConnection,
  dialect: SqlDialect,
  moves: readonly ScheduleMove[],
): Promise<boolean[]> {
  const moved: boolean[] = [];
  for (let start = 0; start < moves.length; start += MOVES_PER_STATEMENT) {
    const part = moves.slice(start, start + MOVES_PER_STATEMENT);
    moved.push(...(await advanceInOneStatement(connection, dialect, part)));
  }
  return moved;
}

async function advanceInOneStatement(
  connection: SqlConnection,
  dialect: SqlDialect,
  moves: readonly ScheduleMove[],
): Promise<boolean[]> {
  const params: (string | number | null)[] = [];
  for (const { read, to } of moves) {
    const spec = read.stored ?? specText(read);
    params.push(read.queue, read.name, read.createdAt, spec, read.lastAt, to);
  }
  const row =
    '(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT))';
  const rows = await connection.query<{ queue: string; name: string }>(
    `WITH moves (queue, name, created_at, spec, last_at, to_at) AS
       (VALUES ${moves.map(() => row).join(', ')}),
     claimed AS (
       SELECT s.queue, s.name, m.to_at FROM leaseq_schedules s JOIN moves m
       ON s.queue = m.queue AND s.name = m.name AND s.created_at = m.created_at
       AND s.spec = m.spec AND s.last_at IS NOT DISTINCT FROM m.last_at${dialect.skipLocked ?? ''})
     UPDATE leaseq_schedules SET last_at = (SELECT to_at FROM claimed c
       WHERE c.queue = leaseq_schedules.queue AND c.name = leaseq_schedules.name)
     WHERE (queue, name) IN (SELECT queue, name FROM claimed)
     RETURNING queue, name`,
    params,
  );
  const moved = new Set(rows.map(({ queue, name }) => `${queue}\u0000${name}`));
  return moves.map(({ read }) => moved.has(`${read.queue}\u0000${read.name}`));
}
