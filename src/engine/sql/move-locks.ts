import type { MoveJobsOperation } from '../../core/index.js';
import { decodeOptions } from './queue-row.js';
import type { SqlConnection } from './sql-connection.js';

/**
 * The queues besides `source` whose locks the `moveJobs` calls `moves` of it may take (R26),
 * read without a lock, so that their transaction takes them all first, with the source's, in
 * lockOrder: the source's dead-letter queue (a job dying at the call's R3), and where its jobs
 * go: `to`, else the queues listed in `origins`, else the queues that dead-letter into the
 * source (where its jobs died). Taken as each job came to them, a move back to the origins
 * locked the source first, then an origin, while a job dying in that origin held it and waited
 * for the source: PostgreSQL broke the cycle after deadlock_timeout by rolling one back. A job
 * whose origin no longer dead-letters into the source still locks that queue as it moves.
 */
export async function queuesMovesLock(
  connection: SqlConnection,
  source: string,
  moves: readonly MoveJobsOperation[],
): Promise<string[]> {
  const toOrigins = moves.some((move) => move.to === undefined && move.origins === undefined);
  // The source's row, and (a read of every queue row) those naming it as dead-letter queue.
  const pattern = `%${likeEscaped(`"deadLetterQueue":${JSON.stringify(source)}`)}%`;
  const rows = await connection.query<{ name: string; options: string }>(
    `SELECT name, options FROM leaseq_queues WHERE name = ?${toOrigins ? " OR options LIKE ? ESCAPE '!'" : ''}`,
    toOrigins ? [source, pattern] : [source],
  );
  const names = new Set<string>();
  const sources: string[] = [];
  for (const row of rows) {
    const target = decodeOptions(row.options).deadLetterQueue;
    if (row.name === source) {
      if (target !== undefined) names.add(target);
    } else if (target === source) sources.push(row.name);
  }
  for (const move of moves) {
    if (move.to !== undefined) names.add(move.to);
    else for (const name of move.origins ?? sources) names.add(name);
  }
  names.delete(source);
  return [...names];
}

/** `text` matched as such by LIKE … ESCAPE '!'. */
function likeEscaped(text: string): string {
  return text.replace(/[!%_]/g, (character) => `!${character}`);
}
