import { describe, expect, it } from 'vitest';
import { BatchContext } from '../../src/engine/sql/executor.js';
import type { SqlConnection } from '../../src/engine/sql/sql-connection.js';
import { TOKEN_BLOCK } from '../../src/engine/sql/token-block.js';
import { tokenFence } from '../../src/engine/sqlite/token-fence.js';

/** A queue row holding only its mark, as the fence reads and writes it. */
function markRow(high: number) {
  const row = { high, raises: [] as number[] };
  const connection: SqlConnection = {
    query: async <Row extends object>() => [{ high: row.high }] as unknown as Row[],
    run: async (_sql, params = []) => {
      row.high = params[0] as number;
      row.raises.push(row.high);
      return 1;
    },
    runEach: async () => {},
    runBeforeCommit: async () => {},
    exec: async () => {},
    begin: async () => {},
    commit: async () => {},
    rollback: async () => {},
  };
  return { row, connection };
}

/** A lease batch fenced for tokens up to `nextToken - 1`, committed and (where asked) synced. */
async function reserveUpTo(
  fence: ReturnType<typeof tokenFence>,
  connection: SqlConnection,
  nextToken: number,
) {
  const batch = new BatchContext('lease');
  await fence.fenceTokens(connection, batch, 'jobs', nextToken);
  const synced = batch.needsSync;
  batch.committed();
  return { synced, answeredAtCommit: batch.answersBeforeSync };
}

describe('R21 R7 the SQLite token fence', () => {
  it('a token past the mark raises it by a block in the same transaction, answered after its sync', async () => {
    const { row, connection } = markRow(0);
    const fence = tokenFence();
    expect(await reserveUpTo(fence, connection, 2)).toEqual({
      synced: true,
      answeredAtCommit: false,
    });
    expect(row.raises).toEqual([1 + TOKEN_BLOCK]);
    // Within the mark it synced: no sync, no raise.
    expect(await reserveUpTo(fence, connection, 3)).toEqual({
      synced: false,
      answeredAtCommit: true,
    });
    expect(await reserveUpTo(fence, connection, 2 + TOKEN_BLOCK)).toEqual({
      synced: false,
      answeredAtCommit: true,
    });
    expect(row.raises).toEqual([1 + TOKEN_BLOCK]);
  });

  it('a mark this connection has not synced since it read it is not trusted, though it covers the token', async () => {
    // Committed by another process (or a batch of this one) whose sync may not have run.
    const { row, connection } = markRow(500);
    const fence = tokenFence();
    expect(await reserveUpTo(fence, connection, 10)).toEqual({
      synced: true,
      answeredAtCommit: false,
    });
    expect(row.raises).toEqual([]);
    expect((await reserveUpTo(fence, connection, 11)).synced).toBe(false);
    // Another process moved it (a clean close lowers it, a reservation raises it): a value not
    // seen before, synced again before it is trusted.
    row.high = 700;
    expect((await reserveUpTo(fence, connection, 12)).synced).toBe(true);
    expect((await reserveUpTo(fence, connection, 13)).synced).toBe(false);
    row.high = 12;
    expect(await reserveUpTo(fence, connection, 14)).toEqual({
      synced: true,
      answeredAtCommit: false,
    });
    expect(row.raises).toEqual([13 + TOKEN_BLOCK]);
  });

  it('a deleted queue is forgotten: the same name made again syncs its mark before trusting it', async () => {
    const { connection } = markRow(0);
    const fence = tokenFence();
    expect((await reserveUpTo(fence, connection, 2)).synced).toBe(true);
    expect((await reserveUpTo(fence, connection, 3)).synced).toBe(false);
    fence.forgetQueue('jobs');
    expect((await reserveUpTo(fence, connection, 4)).synced).toBe(true);
  });

  it('a batch that never committed teaches nothing: the next one syncs again', async () => {
    const { connection } = markRow(0);
    const fence = tokenFence();
    await fence.fenceTokens(connection, new BatchContext('lease'), 'jobs', 2); // rolled back: no commit hooks
    expect((await reserveUpTo(fence, connection, 2)).synced).toBe(true);
  });
});
