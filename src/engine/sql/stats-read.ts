import { copyCounters } from '../../core/counters.js';
import type { QueueStats } from '../../core/index.js';
import type { FiguresRead } from '../stats-by-step.js';
import { type QueueRow, readQueueRows } from './queue-row.js';
import type { SqlConnection, SqlDialect } from './sql-connection.js';

/**
 * A queue's figures (R17) at `now`, from its row once time has been let pass to `now` (see
 * JobMoves.advance), and when its oldest ready job became ready (none: null).
 */
export function statsOfRow(q: QueueRow, now: number, oldestReadySince: number | null): QueueStats {
  return {
    queueTime: q.queueTime,
    ready: q.ready,
    delayed: q.delayed,
    active: q.active,
    dead: q.dead,
    waiting: q.waiting,
    sessions: q.sessions,
    paused: q.options.paused === true,
    // A job that arrived from a queue whose clock was ahead (R26) became ready after now.
    oldestReadyAge: oldestReadySince === null ? 0 : Math.max(0, now - oldestReadySince),
    ...copyCounters(q.counters),
  };
}

/**
 * The figures of many queues in two statements, for a clock-following engine (`follow`: a call
 * behind a queue's time runs at it): each queue where time alone changes nothing by `now` — no
 * lease, delay, session or expiry due, so that a step would only move its time — is read as it
 * stands, without a lock or a write. The others are named in `due`: their figures need a step
 * of their own (on a strict engine, every queue: a step refuses a `now` behind its time, R2).
 * Names of no queue are in neither. With them, the dead-letter queue of each queue read.
 */
export async function readQueueStats(
  connection: SqlConnection,
  dialect: SqlDialect,
  names: readonly string[],
  now: number,
  follow: boolean,
): Promise<FiguresRead> {
  const rows = await readQueueRows(connection, dialect, names);
  const due: string[] = [];
  const quiet: QueueRow[] = [];
  const deadLetterQueues = new Map<string, string>();
  for (const row of rows) {
    if (row.options.deadLetterQueue !== undefined) {
      deadLetterQueues.set(row.name, row.options.deadLetterQueue);
    }
    if (!follow || Math.max(now, row.queueTime) >= row.nextEventAt) due.push(row.name);
    else quiet.push(row);
  }
  const withReady = quiet.filter((row) => row.ready > 0).map((row) => row.name);
  const since = new Map<string, number | null>();
  if (withReady.length > 0) {
    const oldest = await connection.query<{ name: string; since: number | null }>(
      `SELECT names.value AS name, (${dialect.oldestReadyOf('names.value')}) AS since
       FROM ${dialect.jsonList('text')} AS names`,
      [JSON.stringify(withReady)],
    );
    for (const row of oldest) since.set(row.name, row.since === null ? null : Number(row.since));
  }
  const stats = new Map<string, QueueStats>();
  for (const row of quiet) {
    const at = Math.max(now, row.queueTime);
    stats.set(row.name, statsOfRow({ ...row, queueTime: at }, at, since.get(row.name) ?? null));
  }
  return { stats, due, deadLetterQueues };
}
