import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { SqliteConnection, STATEMENTS_KEPT } from '../../src/engine/sqlite/sqlite-connection.js';
import { open } from '../../src/index.js';
import { temporaryDirectory } from '../temporary-directory.js';

const directory = temporaryDirectory('leaseq-sqlite-statements-');

/** The prepared statements a connection holds, by text. */
function keptBy(connection: SqliteConnection): Map<string, unknown> {
  return (connection as unknown as { statements: Map<string, unknown> }).statements;
}

describe('the prepared statements of a SQLite connection', () => {
  it('stay within their bound however many different statements callers run', async () => {
    const db = new Database(':memory:');
    try {
      const connection = new SqliteConnection(db);
      for (let n = 0; n < STATEMENTS_KEPT * 2 + 10; n += 1) {
        expect(await connection.query(`SELECT ${n} AS n`)).toEqual([{ n }]);
      }
      expect(keptBy(connection).size).toBeLessThanOrEqual(STATEMENTS_KEPT);
      // One let go is prepared again and answers as before.
      expect(await connection.query('SELECT 0 AS n')).toEqual([{ n: 0 }]);
      expect(await connection.run('CREATE TABLE t (v INTEGER)')).toBe(0);
      await connection.runEach('INSERT INTO t (v) VALUES (?)', [[1], [2]]);
      expect(await connection.query('SELECT sum(v) AS total FROM t')).toEqual([{ total: 3 }]);
    } finally {
      db.close();
    }
  });

  it('stay within their bound for transactions of a broker whose statements are each new', async () => {
    const broker = await open(`sqlite:${directory}/statements.db`, { durability: 'os' });
    try {
      const queue = await broker.queue('jobs', { visibility: 600_000 });
      await broker.transaction((tx) => tx.run('CREATE TABLE notes (id INTEGER, body TEXT)'));
      let kept: Map<string, unknown> | undefined;
      const query = SqliteConnection.prototype.query;
      // The broker's one connection, as its first query names it.
      const spy = vi.spyOn(SqliteConnection.prototype, 'query').mockImplementation(function (
        this: SqliteConnection,
        ...args: Parameters<SqliteConnection['query']>
      ) {
        kept ??= keptBy(this);
        return query.apply(this, args);
      });
      try {
        for (let n = 0; n < STATEMENTS_KEPT + 500; n += 1) {
          // Values written into the text, as some callers do: each statement is new.
          await broker.transaction(async (tx) => {
            await tx.run(`INSERT INTO notes (id, body) VALUES (${n}, 'note ${n}')`);
            await tx.query(`SELECT body FROM notes WHERE id = ${n}`);
          });
        }
      } finally {
        spy.mockRestore();
      }
      expect(kept?.size).toBeLessThanOrEqual(STATEMENTS_KEPT);
      // The engine's own statements, let go with the others, are prepared again.
      await queue.publish({ id: 'after' });
      const [delivery] = await queue.receive();
      expect(delivery?.id).toBe('after');
      expect(await queue.ack(delivery?.token ?? 0)).toBe(true);
      const [count] = await broker.transaction((tx) =>
        tx.query<{ count: number }>('SELECT count(*) AS count FROM notes'),
      );
      expect(count?.count).toBe(STATEMENTS_KEPT + 500);
    } finally {
      await broker.close();
    }
  });
});
