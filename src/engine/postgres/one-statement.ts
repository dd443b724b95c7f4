import type { BatchContext } from '../sql/executor.js';
import type { OneStatementOps, SqlConnection, TakenJob } from '../sql/sql-connection.js';
import { TOKEN_BLOCK } from '../sql/token-block.js';
import type { PostgresConnection } from './postgres-connection.js';

/**
 * Reserve and ack in one round trip each: functions of the schema (migrations 0013, 0016) that do
 * the common case and answer `fallback` for the rest. A reservation commits without waiting for the
 * WAL flush (R21) unless it raised its queue's token mark.
 */
export const POSTGRES_ONE_STATEMENT: OneStatementOps = {
  // The connection is always a PostgresConnection here: the dialect is PostgreSQL's alone.
  async reserve(connection, { queue, now, max, visibility, followClock, withNextEvent }) {
    // The plain function where no next event is wanted: the other wraps it, at a cost per call.
    const name = withNextEvent ? 'leaseq_reserve_next' : 'leaseq_reserve';
    const rows = await (connection as PostgresConnection).queryPrepared<ReserveRow>(
      name,
      `SELECT * FROM ${name}(?, ?, ?, ?, ?, ?)`,
      [queue, now, max, visibility ?? null, followClock ? 'true' : 'false', TOKEN_BLOCK],
    );
    const [first] = rows;
    if (first?.fallback) return undefined;
    if (first === undefined || first.id === null) {
      if (!withNextEvent) return { jobs: [] };
      // Nothing taken: the one row that says so carries the next event (SQL NULL: none).
      if (first === undefined) return undefined;
      const at = first.next_event_at;
      return { jobs: [], next: { at: at === null ? undefined : Number(at) } };
    }
    return { jobs: rows as TakenJob[] };
  },
  async ack(connection, { queue, now, tokens, followClock }) {
    const rows = await (connection as PostgresConnection).queryPrepared<{
      fallback: boolean;
      token: number;
    }>('leaseq_ack', 'SELECT * FROM leaseq_ack(?, ?, ?::bigint[], ?)', [
      queue,
      now,
      `{${tokens.join(',')}}`,
      followClock ? 'true' : 'false',
    ]);
    if (rows[0]?.fallback) return undefined;
    return new Set(rows.map((row) => row.token));
  },
};

/**
 * A row of leaseq_reserve or leaseq_reserve_next: a job taken, a fallback, or (the latter's, id
 * null) nothing taken, with the next event.
 */
type ReserveRow = { fallback: boolean; next_event_at?: number | null } & (
  | TakenJob
  | { [K in keyof TakenJob]: null }
);

/**
 * R21 on PostgreSQL: a transaction that handed out tokens above its queue's mark raises the
 * mark by a block, and its commit then waits for the WAL flush even where it otherwise would
 * not (`lease`), so no token is answered before a mark above it is on disk.
 */
export async function fenceTokens(
  connection: SqlConnection,
  _batch: BatchContext,
  queue: string,
  nextToken: number,
): Promise<void> {
  const handedOut = nextToken - 1;
  await connection.runBeforeCommit(
    `UPDATE leaseq_queues SET token_high_water = ? WHERE name = ? AND token_high_water < ?
     RETURNING set_config('synchronous_commit', 'on', true)`,
    [handedOut + TOKEN_BLOCK, queue, handedOut],
  );
}
