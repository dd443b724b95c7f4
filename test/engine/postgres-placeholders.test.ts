import { describe, expect, it } from 'vitest';
import { EngineBroker } from '../../src/broker/index.js';
import { scanPlaceholders } from '../../src/engine/postgres/placeholders.js';
import { toPostgresPlaceholders } from '../../src/engine/postgres/postgres-connection.js';
import { ManualClock } from '../../src/index.js';
import { queueName, useConformanceEngines } from '../conformance/engines.js';
import { roundTrips } from './round-trips.js';

/**
 * `?` placeholders on PostgreSQL: a `?` inside a string, quoted identifier or comment is text,
 * and a bound value is never SQL text, also where the connection inlines values to send a
 * statement together with its BEGIN (a transaction's first statement).
 */

const numbered = toPostgresPlaceholders;

describe('the placeholder scanner', () => {
  it('numbers the placeholders outside quotes and comments, $1 upward', () => {
    expect(numbered('SELECT ?, ? FROM t WHERE a = ?')).toBe('SELECT $1, $2 FROM t WHERE a = $3');
    expect(numbered('SELECT 1')).toBe('SELECT 1');
    expect(scanPlaceholders('?,?').parts).toEqual(['', ',', '']);
  });

  it("leaves a ? in a '…' string, '' escapes included", () => {
    expect(numbered("SELECT ?, 'it''s ?', ?")).toBe("SELECT $1, 'it''s ?', $2");
    expect(numbered("SELECT '''?''', ? || '?'")).toBe("SELECT '''?''', $1 || '?'");
    expect(numbered("INSERT INTO t VALUES ('Q?', ?)")).toBe("INSERT INTO t VALUES ('Q?', $1)");
  });

  it("leaves a ? in an E'…' string, where a backslash escapes the quote", () => {
    expect(numbered("SELECT E'it\\'s ?', ?")).toBe("SELECT E'it\\'s ?', $1");
    expect(numbered("SELECT e'\\\\', ?, e'?''\\'?'")).toBe("SELECT e'\\\\', $1, e'?''\\'?'");
    expect(scanPlaceholders("SELECT E'a\\'?'").backslashInPlainString).toBe(false);
  });

  it("takes a word ending in e before a quote for a word, not an E'…' string", () => {
    const statement = scanPlaceholders("SELECT name'\\', ?");
    expect(statement.numbered).toBe("SELECT name'\\', $1");
    expect(statement.backslashInPlainString).toBe(true);
  });

  it("leaves a ? in a U&'…' string", () => {
    const statement = scanPlaceholders("SELECT U&'d\\0061t?''?', ?");
    expect(statement.numbered).toBe("SELECT U&'d\\0061t?''?', $1");
    expect(statement.backslashInPlainString).toBe(false);
  });

  it('leaves a ? in a "quoted" identifier, "" escapes included', () => {
    expect(numbered('SELECT "who?", "a""?" FROM t WHERE x = ?')).toBe(
      'SELECT "who?", "a""?" FROM t WHERE x = $1',
    );
    expect(numbered('SELECT U&"d?" FROM t WHERE x = ?')).toBe('SELECT U&"d?" FROM t WHERE x = $1');
  });

  it('leaves a ? in a -- comment, which ends at the line', () => {
    expect(numbered('SELECT ? -- why? and why not?\n, ?')).toBe(
      'SELECT $1 -- why? and why not?\n, $2',
    );
    expect(numbered('SELECT ? --?\r?')).toBe('SELECT $1 --?\r$2');
    expect(numbered('SELECT ? -- trailing?')).toBe('SELECT $1 -- trailing?');
  });

  it('leaves a ? in a /* */ comment, nested ones included', () => {
    expect(numbered('SELECT /* ? */ ?, ?')).toBe('SELECT /* ? */ $1, $2');
    expect(numbered('SELECT /* a? /* b? */ c? */ ?')).toBe('SELECT /* a? /* b? */ c? */ $1');
    expect(numbered('SELECT ?/**/?')).toBe('SELECT $1/**/$2');
  });

  it('leaves a ? in a dollar-quoted string, $$…$$ and $tag$…$tag$', () => {
    expect(numbered("SELECT $$it's ?$$, ?, $tag$ $$ ? $ ' $tag$, ?")).toBe(
      "SELECT $$it's ?$$, $1, $tag$ $$ ? $ ' $tag$, $2",
    );
    expect(numbered('SELECT $a1$?$a$?$a1$, ?')).toBe('SELECT $a1$?$a$?$a1$, $1');
  });

  it('takes a $ inside a word, or $n, for no dollar quote', () => {
    expect(numbered('SELECT a$b$, ?, $1 FROM t$$ WHERE c = ?')).toBe(
      'SELECT a$b$, $1, $1 FROM t$$ WHERE c = $2',
    );
  });

  it('reads a string continued on the next line as one string of its kind', () => {
    // PostgreSQL joins 'a' <newline> 'b' into one string; E's backslash escapes go on in 'b'.
    expect(numbered("SELECT E'a'\n  '\\'?', ?")).toBe("SELECT E'a'\n  '\\'?', $1");
    expect(numbered("SELECT E'a' -- x?\n'\\'?', ?")).toBe("SELECT E'a' -- x?\n'\\'?', $1");
    expect(numbered("SELECT 'a' '?', ?")).toBe("SELECT 'a' '?', $1");
  });

  it("flags a plain '…' string holding a backslash (its end depends on standard_conforming_strings)", () => {
    expect(scanPlaceholders("SELECT 'C:\\dir', ?").backslashInPlainString).toBe(true);
    expect(scanPlaceholders("SELECT E'C:\\dir', ?").backslashInPlainString).toBe(false);
    expect(scanPlaceholders('SELECT $$C:\\dir$$, ?').backslashInPlainString).toBe(false);
    expect(scanPlaceholders('SELECT "C:\\dir", ?').backslashInPlainString).toBe(false);
    expect(scanPlaceholders('SELECT ? -- C:\\dir').backslashInPlainString).toBe(false);
  });

  it('tells one statement from several', () => {
    expect(scanPlaceholders('SELECT ?; SELECT ?').multiStatement).toBe(true);
    expect(scanPlaceholders('SELECT ?;').multiStatement).toBe(false);
    expect(scanPlaceholders('SELECT ?; -- done\n /* */ ;').multiStatement).toBe(false);
    expect(scanPlaceholders("SELECT ';?'").multiStatement).toBe(false);
  });

  it("takes jsonb's ?, ?| and ?& for placeholders (docs/engines.md: write jsonb_exists…)", () => {
    expect(numbered("SELECT doc ? 'a', doc ?| ?, doc ?& ?")).toBe(
      "SELECT doc $1 'a', doc $2| $3, doc $4& $5",
    );
  });

  it('finds no placeholder in an unterminated string, identifier, comment or dollar quote', () => {
    for (const sql of ["SELECT 'a ?", 'SELECT "a ?', 'SELECT /* ? /* ? */ ?', 'SELECT $x$ ?']) {
      expect(scanPlaceholders(sql).parts).toEqual([sql]);
    }
  });
});

// The same statements through the public transaction API, on PostgreSQL and on SQLite.
const engines = (await useConformanceEngines({ client: false })).filter(
  (engine) => engine.name === 'postgres' || engine.name === 'sqlite',
);

/** A value that would be SQL if it left its literal. */
const SQL_VALUE = ' || current_user || ';
/** A value that would close the statement's string and add a row if it left its literal. */
const CLOSING_VALUE = "x'), ('injected', 'row";

for (const engine of engines) {
  const title = `placeholders in a caller's transaction on ${engine.name}`;
  (engine.skipReason === undefined ? describe : describe.skip)(
    engine.skipReason === undefined ? title : `${title} — skipped: ${engine.skipReason}`,
    () => {
      async function setup() {
        const broker = new EngineBroker(await engine.factory.open(), {
          clock: new ManualClock(1_000),
        });
        const table = `lq_ph_${queueName('ph').replace(/[^a-z0-9]/gi, '_')}`;
        await broker.transaction((tx) =>
          tx.run(`CREATE TABLE ${table} (note TEXT, who TEXT, n INTEGER)`),
        );
        const rows = () =>
          broker.transaction((tx) =>
            tx.query(`SELECT note, who, n FROM ${table} ORDER BY n, note`),
          );
        const close = async () => {
          await broker.transaction((tx) => tx.run(`DROP TABLE ${table}`));
          await broker.close();
        };
        return { broker, table, rows, close };
      }

      it('a value bound beside a literal ? stays a value: first statement of the transaction', async () => {
        const { broker, table, rows, close } = await setup();
        try {
          await broker.transaction((tx) =>
            tx.run(`INSERT INTO ${table} (note, who, n) VALUES ('Q?', ?, 1)`, [SQL_VALUE]),
          );
          expect(await rows()).toEqual([{ note: 'Q?', who: SQL_VALUE, n: 1 }]);
          await broker.transaction((tx) =>
            tx.run(`INSERT INTO ${table} (note, who, n) VALUES ('why?', ?, 2)`, [CLOSING_VALUE]),
          );
          expect(await rows()).toEqual([
            { note: 'Q?', who: SQL_VALUE, n: 1 },
            { note: 'why?', who: CLOSING_VALUE, n: 2 },
          ]);
        } finally {
          await close();
        }
      });

      it('a value bound beside a literal ? stays a value: a later statement', async () => {
        const { broker, table, rows, close } = await setup();
        try {
          await broker.transaction(async (tx) => {
            await tx.query('SELECT 1 AS one');
            await tx.run(`INSERT INTO ${table} (note, who, n) VALUES ('Q?', ?, 1)`, [SQL_VALUE]);
            await tx.run(`INSERT INTO ${table} (note, who, n) VALUES ('really?', ?, 2)`, ['bob']);
            await tx.run(`INSERT INTO ${table} (note, who, n) VALUES ('why?', ?, 3)`, [
              CLOSING_VALUE,
            ]);
          });
          expect(await rows()).toEqual([
            { note: 'Q?', who: SQL_VALUE, n: 1 },
            { note: 'really?', who: 'bob', n: 2 },
            { note: 'why?', who: CLOSING_VALUE, n: 3 },
          ]);
        } finally {
          await close();
        }
      });

      it('? in \'\' strings, "quoted" identifiers and comments, placeholders around them, first and later', async () => {
        const { broker, table, rows, close } = await setup();
        const sql = `INSERT INTO ${table} /* into? */ (note, "who", n) -- which?
        SELECT ? || 'it''s ?' || ?, "who?" || ?, CAST(? AS INTEGER) FROM (SELECT ? AS "who?") AS s`;
        try {
          for (const n of [1, 2]) {
            await broker.transaction(async (tx) => {
              if (n === 2) await tx.query('SELECT 1 AS one');
              await tx.run(sql, ['<', "'>", "?'", n, SQL_VALUE]);
            });
          }
          const row = { note: "<it's ?'>", who: `${SQL_VALUE}?'` };
          expect(await rows()).toEqual([
            { ...row, n: 1 },
            { ...row, n: 2 },
          ]);
        } finally {
          await close();
        }
      });

      it('values next to operators, a backslash in a string, a query: the same answers', async () => {
        const { broker, table, rows, close } = await setup();
        try {
          for (const first of [true, false]) {
            await broker.transaction(async (tx) => {
              if (!first) await tx.query('SELECT 1 AS one');
              // 10-? with -5 must not become the comment 10--5.
              await tx.run(`INSERT INTO ${table} (note, who, n) VALUES ('C:\\dir?', ?, 10-?)`, [
                'a\\b',
                first ? -5 : -6,
              ]);
            });
          }
          expect(await rows()).toEqual([
            { note: 'C:\\dir?', who: 'a\\b', n: 15 },
            { note: 'C:\\dir?', who: 'a\\b', n: 16 },
          ]);
          const found = await broker.transaction((tx) =>
            tx.query(`SELECT n FROM ${table} WHERE note = 'C:\\dir?' AND n > ? ORDER BY n`, [15]),
          );
          expect(found).toEqual([{ n: 16 }]);
        } finally {
          await close();
        }
      });

      it('a placeholder without its value fails, first statement or later: nothing stored', async () => {
        const { broker, table, rows, close } = await setup();
        try {
          for (const first of [true, false]) {
            const attempt = broker.transaction(async (tx) => {
              if (!first) await tx.query('SELECT 1 AS one');
              await tx.run(`INSERT INTO ${table} (note, who, n) VALUES ('x', ?, ?)`, ['only one']);
            });
            await expect(attempt).rejects.toThrow();
          }
          expect(await rows()).toEqual([]);
        } finally {
          await close();
        }
      });

      if (engine.name !== 'postgres') return;

      it("PostgreSQL's own quoting: E'' strings, dollar quotes, nested comments, first and later", async () => {
        const { broker, table, rows, close } = await setup();
        const sql = `INSERT INTO ${table} (note, who, n) /* a? /* b? */ c? */
        VALUES (E'it\\'s ?' || $$ $? $$ || $q$'?'$q$ || ?, ?, ?)`;
        try {
          for (const n of [1, 2]) {
            await broker.transaction(async (tx) => {
              if (n === 2) await tx.query('SELECT 1 AS one');
              await tx.run(sql, ['!', CLOSING_VALUE, n]);
            });
          }
          const note = "it's ? $? '?'!";
          expect(await rows()).toEqual([
            { note, who: CLOSING_VALUE, n: 1 },
            { note, who: CLOSING_VALUE, n: 2 },
          ]);
        } finally {
          await close();
        }
      });

      it("jsonb's ? operators, written as functions (docs/engines.md)", async () => {
        const { broker, close } = await setup();
        try {
          const answer = await broker.transaction((tx) =>
            tx.query(
              `SELECT jsonb_exists(?::jsonb, ?) AS one, jsonb_exists_any(?::jsonb, ?::text[]) AS anyof,
                    jsonb_exists_all(?::jsonb, ?::text[]) AS allof`,
              ['{"a":1}', 'a', '{"a":1}', '{b,a}', '{"a":1}', '{b,a}'],
            ),
          );
          expect(answer).toEqual([{ one: true, anyof: true, allof: false }]);
        } finally {
          await close();
        }
      });

      it("a caller's first statement still travels with its BEGIN: one round trip", async () => {
        const { broker, table, close } = await setup();
        try {
          const sent = await roundTrips(() =>
            broker.transaction((tx) =>
              tx.run(`INSERT INTO ${table} (note, who, n) VALUES ('Q?', ?, ?)`, [CLOSING_VALUE, 1]),
            ),
          );
          expect(sent).toHaveLength(2); // BEGIN with the statement, then COMMIT
          expect(sent[0]).toMatch(/^BEGIN; INSERT/);
          expect(sent[1]).toBe('COMMIT');
        } finally {
          await close();
        }
      });
    },
  );
}
