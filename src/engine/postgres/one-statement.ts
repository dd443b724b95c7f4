import type { BatchContext } from '../sql/executor.js';
import type { OneStatementOps, SqlConnection, TakenJob } from '../sql/sql-connection.js';
import { TOKEN_BLOCK } from '../sql/token-block.js';
import type { PostgresConnection } from './postgres-connection.js';

/**
 * Reserve and ack in one round trip each: functions of the schema (migration 0013) that do the
 * common case and answer `fallback` for the rest. A reservation commits without waiting for the
 * WAL flush (R21) unless it raised its queue's token mark.
 */
export const POSTGRES_ONE_STATEMENT: OneStatementOps = {
  // The connection is always a PostgresConnection here: the dialect is PostgreSQL's alone.
  async reserve(connection, { queue, now, max, visibility, followClock }) {
    const rows = await (connection as PostgresConnection).queryPrepared<
      TakenJob & { fallback: boolean }
    >('leaseq_reserve', 'SELECT * FROM leaseq_reserve(?, ?, ?, ?, ?, ?)', [
      queue,
      now,
      max,
      visibility ?? null,
      followClock ? 'true' : 'false',
      TOKEN_BLOCK,
    ]);
    if (rows[0]?.fallback) return undefined;
    return rows;
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
