import type { SqlConnection, SqlDialect } from '../sql/sql-connection.js';
import { TOKEN_BLOCK } from '../sql/token-block.js';

/**
 * Keeps tokens unique across a power loss (R21). A reservation commits without a sync of its
 * own, so a power loss can discard it together with the queue's token counter, and the
 * counter would then hand its tokens out again. So no token is answered before a sync has put
 * a high-water mark at or above it on disk: within such a mark, reservations need no sync;
 * past it, the mark is raised by a block in the same transaction, whose answers then wait for
 * a sync after its commit. After a crash the counter restarts above the mark
 * (`continueAboveHighWater`).
 *
 * A mark read from the file is trusted only once this connection synced the WAL after reading
 * it: another process (or this one, in a batch whose sync still runs) may have committed it
 * without its sync yet. Trusted is the exact value seen: a mark lowered by another process's
 * clean close (`lowerHighWater`) and raised again is a value never seen before, so it is synced
 * again before it is trusted.
 */
export function tokenFence(): Required<Pick<SqlDialect, 'fenceTokens' | 'forgetQueue'>> {
  const synced = new Map<string, number>();
  const fenceTokens: NonNullable<SqlDialect['fenceTokens']> = async (
    connection,
    batch,
    queue,
    nextToken,
  ) => {
    const [stored] = await connection.query<{ high: number }>(
      'SELECT token_high_water AS high FROM leaseq_queues WHERE name = ?',
      [queue],
    );
    if (stored === undefined) return;
    const handedOut = nextToken - 1;
    if (handedOut <= stored.high && synced.get(queue) === stored.high) return;
    let mark = stored.high;
    if (handedOut > mark) {
      mark = handedOut + TOKEN_BLOCK;
      await connection.run('UPDATE leaseq_queues SET token_high_water = ? WHERE name = ?', [
        mark,
        queue,
      ]);
    }
    // Tokens below the mark go out only once it is on disk, even a waiting receiver's.
    batch.syncBeforeAnswers();
    batch.afterCommit(() => synced.set(queue, mark));
  };
  // A queue made again under the name reads its own mark, synced again before it is trusted.
  return { fenceTokens, forgetQueue: (queue) => synced.delete(queue) };
}

/**
 * At open: a queue whose counter is at or below its mark may have lost reservations to a
 * power loss, so its tokens continue above the mark. Run in a durable transaction.
 */
export async function continueAboveHighWater(connection: SqlConnection): Promise<void> {
  await connection.run(
    `UPDATE leaseq_queues SET next_token = token_high_water + 1
     WHERE next_token <= token_high_water`,
  );
}

/**
 * At a clean close: every token handed out is below each counter, so the marks come down to
 * them and the next open continues the counters exactly (no gap). Another process still using
 * the file raises a mark again before its next token is answered. Run in a durable transaction.
 */
export async function lowerHighWater(connection: SqlConnection): Promise<void> {
  await connection.run(
    `UPDATE leaseq_queues SET token_high_water = next_token - 1
     WHERE token_high_water > next_token - 1`,
  );
}
