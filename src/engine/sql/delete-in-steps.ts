import type { BatchContext } from './executor.js';
import type { SqlConnection, SqlDialect } from './sql-connection.js';

/**
 * Rows deleted per statement where statements run in this process (SQLite): one statement for
 * the 300,000 jobs of a queue held the process for 1.5 s, and a server's every other client
 * (heartbeats, health checks, signals) with it.
 */
export const DELETE_STEP = 1000;

/**
 * Deletes the rows of queue `queue` in `table` (keyed by queue and id) that `where` keeps (SQL
 * over the table's columns, none when absent), within the batch's transaction. Where statements
 * run in this process, in steps with a turn of the event loop between two (see
 * BatchContext.turn): still one unit, committed or rolled back whole.
 */
export async function deleteInSteps(
  connection: SqlConnection,
  dialect: SqlDialect,
  batch: BatchContext,
  table: string,
  queue: string,
  where?: string,
): Promise<void> {
  const kept = where === undefined ? '' : ` AND ${where}`;
  if (dialect.setBased) {
    await connection.run(`DELETE FROM ${table} WHERE queue = ?${kept}`, [queue]);
    return;
  }
  for (;;) {
    const deleted = await connection.run(
      `DELETE FROM ${table} WHERE queue = ? AND id IN (SELECT id FROM ${table} WHERE queue = ?${kept} LIMIT ${DELETE_STEP})`,
      [queue, queue],
    );
    if (deleted < DELETE_STEP) return;
    await batch.turn();
  }
}
