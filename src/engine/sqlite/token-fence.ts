import type { BatchContext } from '../sql/executor.js';
import type { SqlConnection } from '../sql/sql-connection.js';
import { TOKEN_BLOCK } from '../sql/token-block.js';

/**
 * Keeps tokens unique across a power loss (R21). A reservation commits without a sync of its
 * own, so a power loss can discard it together with the queue's token counter, and the
 * counter would then hand its tokens out again. So no token is answered before a synced
 * commit has stored a high-water mark at or above it: within the mark, reservations need no
 * sync; past it, the mark is raised by a block, in this transaction when it is durable anyway
 * or else in a durable one right after it, before any answer goes out. After a crash the
 * counter restarts above the mark (`continueAboveHighWater`).
 */
export async function fenceTokens(
  connection: SqlConnection,
  batch: BatchContext,
  queue: string,
  nextToken: number,
): Promise<void> {
  const [stored] = await connection.query<{ high: number }>(
    'SELECT token_high_water AS high FROM leaseq_queues WHERE name = ?',
    [queue],
  );
  const handedOut = nextToken - 1;
  if (stored === undefined || handedOut <= stored.high) return;
  const raise = async (target: SqlConnection) => {
    await target.run(
      'UPDATE leaseq_queues SET token_high_water = MAX(token_high_water, ?) WHERE name = ?',
      [handedOut + TOKEN_BLOCK, queue],
    );
  };
  if (batch.kind === 'durable') {
    await raise(connection);
    // Tokens below the new mark go out only once it is on disk, even a waiting receiver's.
    batch.holdAnswersForSync();
  } else {
    batch.durableAfterCommit(raise);
  }
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
