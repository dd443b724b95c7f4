import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { POSTGRES_URL, postgresSkipReason } from '../crash/postgres.js';
import { temporaryDirectory } from '../temporary-directory.js';

/**
 * R34: a page of dead letters read with `payloads: false` (the dashboard's list, every 2 s)
 * takes no payload out of the storage. It used to read every payload and drop it afterwards:
 * 200 dead jobs of 200 KB each moved 40 MB out of the database at every reading.
 */
const dir = temporaryDirectory('leaseq-dead-letter-reads-');

const JOBS = 20;
const PAYLOAD_CHARS = 200_000;

/** What the engine's statements were and how many characters their rows held. */
interface Reads {
  statements: string[];
  chars: number;
}

/** Characters of every string value in `rows`, the payloads' JSON text among them. */
function charsOf(rows: readonly object[]): number {
  let chars = 0;
  for (const row of rows) {
    for (const value of Object.values(row)) if (typeof value === 'string') chars += value.length;
  }
  return chars;
}

/** The queries `connection` (a class's prototype) runs while `action` runs, with their rows. */
async function readsOf<T>(
  connection: typeof SqliteConnection | typeof PostgresConnection,
  action: () => Promise<T>,
): Promise<{ reads: Reads; result: T }> {
  const reads: Reads = { statements: [], chars: 0 };
  const query = connection.prototype.query;
  const spy = vi.spyOn(connection.prototype, 'query').mockImplementation(async function (
    this: unknown,
    sql: string,
    params?: readonly SqlValue[],
  ) {
    const rows = (await query.call(this as never, sql, params)) as object[];
    reads.statements.push(sql);
    reads.chars += charsOf(rows);
    return rows as never;
  });
  try {
    return { reads, result: await action() };
  } finally {
    spy.mockRestore();
  }
}

/** JOBS dead jobs of PAYLOAD_CHARS each in a fresh queue `name`, in order of their ids. */
async function deadJobs(engine: Engine, name: string): Promise<void> {
  const queue = await engine.queue(name);
  await queue.publishBatch(
    0,
    Array.from({ length: JOBS }, (_, n) => ({
      id: `big-${n}`,
      payload: { n, blob: String(n % 10).repeat(PAYLOAD_CHARS) },
    })),
  );
  for (const delivery of await queue.reserve(1, { max: JOBS })) {
    await queue.nack(1, delivery.token, { requeue: false, reason: 'bad' });
  }
  expect(await queue.stats(1)).toMatchObject({ dead: JOBS });
}

/**
 * Reads the page of the JOBS dead jobs with and without payloads, each under the spy: the one
 * without names no payload column in any statement and its rows hold far less than one payload,
 * where the one with payloads reads them all. Then the pages are the same but for payloads.
 */
async function expectNoPayloadRead(
  engine: Engine,
  name: string,
  connection: typeof SqliteConnection | typeof PostgresConnection,
): Promise<void> {
  const queue = await engine.queue(name);
  const bare = await readsOf(connection, () =>
    queue.deadLetterPage({ limit: JOBS, payloads: false }),
  );
  const full = await readsOf(connection, () => queue.deadLetterPage({ limit: JOBS }));
  // The spy sees what the page with payloads reads: every payload.
  expect(full.reads.chars).toBeGreaterThan(JOBS * PAYLOAD_CHARS);
  expect(full.reads.statements.some((sql) => /\bpayload\b/.test(sql))).toBe(true);
  expect(bare.reads.statements.length).toBeGreaterThan(0);
  expect(bare.reads.chars, 'characters read for the page without payloads').toBeLessThan(
    PAYLOAD_CHARS / 10,
  );
  expect(bare.reads.statements.filter((sql) => /\bpayload\b/.test(sql))).toEqual([]);

  expect(full.result.deadLetters.map((letter) => letter.id)).toEqual(
    Array.from({ length: JOBS }, (_, n) => `big-${n}`),
  );
  expect(full.result.deadLetters[3]?.payload).toEqual({ n: 3, blob: '3'.repeat(PAYLOAD_CHARS) });
  expect(bare.result.next).toEqual(full.result.next);
  expect(bare.result.deadLetters).toEqual(
    full.result.deadLetters.map(({ payload: _, ...letter }) => letter),
  );
  for (const letter of bare.result.deadLetters) expect(letter).not.toHaveProperty('payload');
}

describe('R34 a dead letter page without payloads reads none from the storage', () => {
  it('SQLite: the statements select no payload and their rows hold none', async () => {
    const engine = await openEngine(`sqlite:${join(dir, 'reads.db')}`);
    try {
      await deadJobs(engine, 'reads');
      await expectNoPayloadRead(engine, 'reads', SqliteConnection);
    } finally {
      await engine.close();
    }
  });

  it('PostgreSQL: the statements select no payload and their rows hold none', async (context) => {
    const skip = await postgresSkipReason();
    if (skip !== undefined) return context.skip(skip);
    const engine = await openEngine(POSTGRES_URL);
    const name = `dead-reads-${process.pid}-${Date.now()}`;
    try {
      await deadJobs(engine, name);
      await expectNoPayloadRead(engine, name, PostgresConnection);
    } finally {
      await engine.deleteQueue(name);
      await engine.close();
    }
  });
});
