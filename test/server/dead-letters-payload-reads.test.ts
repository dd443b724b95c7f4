import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { call, startTestServer, type TestServer } from './helpers.js';

/**
 * GET /v1/queues/{name}/dead-letters?payload=false (the dashboard's list, every 2 s) asks the
 * storage for no payload: it used to read every one and leave it out of the answer after.
 */
const JOBS = 10;
const PAYLOAD_CHARS = 200_000;

describe('GET /v1/queues/{name}/dead-letters?payload=false over SQLite', () => {
  const dir = temporaryDirectory('leaseq-dead-letters-reads-');
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ url: `sqlite:${join(dir, 'dead.db')}` });
    const queue = await server.broker.queue('held');
    await queue.publishBatch(
      Array.from({ length: JOBS }, (_, n) => ({
        id: `big-${n}`,
        payload: 'x'.repeat(PAYLOAD_CHARS),
      })),
    );
    for (const delivery of await queue.receive({ max: JOBS })) {
      await queue.nack(delivery.token, { requeue: false, reason: 'bad' });
    }
  });

  afterAll(async () => {
    await server?.close();
  });

  /** The answer to GET `path`, with the characters of the rows the storage gave meanwhile. */
  async function readWithRows(path: string) {
    let chars = 0;
    const statements: string[] = [];
    const query = SqliteConnection.prototype.query;
    const spy = vi.spyOn(SqliteConnection.prototype, 'query').mockImplementation(async function (
      this: SqliteConnection,
      sql: string,
      params?: readonly SqlValue[],
    ) {
      const rows = (await query.call(this, sql, params)) as object[];
      statements.push(sql);
      for (const row of rows) {
        for (const value of Object.values(row)) {
          if (typeof value === 'string') chars += value.length;
        }
      }
      return rows as never;
    });
    try {
      const answer = await call(`${server.baseUrl}/v1/queues/held`, 'GET', path);
      return { answer, chars, statements };
    } finally {
      spy.mockRestore();
    }
  }

  it('reads no payload from the storage, and answers the page without them', async () => {
    const bare = await readWithRows(`/dead-letters?payload=false&limit=${JOBS}`);
    expect(bare.answer.status).toBe(200);
    expect(bare.answer.body.deadLetters).toHaveLength(JOBS);
    for (const letter of bare.answer.body.deadLetters) {
      expect(letter).toEqual({
        id: expect.stringMatching(/^big-/),
        reason: 'bad',
        deliveryCount: 1,
        deadAt: expect.any(Number),
        history: [expect.objectContaining({ outcome: 'rejected', reason: 'bad' })],
      });
    }
    expect(bare.statements.filter((sql) => /\bpayload\b/.test(sql))).toEqual([]);
    expect(bare.chars).toBeLessThan(PAYLOAD_CHARS / 10);

    // With payloads, the same spy sees each of them read.
    const full = await readWithRows(`/dead-letters?limit=${JOBS}`);
    expect(full.answer.body.deadLetters[0].payload).toBe('x'.repeat(PAYLOAD_CHARS));
    expect(full.chars).toBeGreaterThan(JOBS * PAYLOAD_CHARS);
  });
});
