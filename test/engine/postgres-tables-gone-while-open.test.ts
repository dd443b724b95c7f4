import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { open, StorageUnavailableError } from '../../src/index.js';
import { postgresSkipReason } from '../crash/postgres.js';
import { call, startTestServer } from '../server/helpers.js';
import { type ScratchDatabase, scratchDatabase } from './postgres-scratch.js';

/**
 * A database dropped and made again (or restored without leaseq's tables) under an open
 * process: every call is refused as the storage's failure, typed, and the server answers 503
 * with STORAGE_UNAVAILABLE (its readiness too), never a raw driver error and 500 INTERNAL.
 */
let skip: string | undefined;
let scratch: ScratchDatabase | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip === undefined) scratch = await scratchDatabase('tables_gone');
});

afterAll(async () => {
  await scratch?.drop();
});

function database(): ScratchDatabase {
  if (scratch === undefined) throw new Error('no scratch database');
  return scratch;
}

describe('PostgreSQL: leaseq tables gone from a database while open', () => {
  it('the database dropped and made again: StorageUnavailableError, 503 over HTTP and on /readyz', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const db = database();
    const server = await startTestServer({ url: db.url() });
    const broker = await open(db.url());
    try {
      await broker.queue('gone');
      const publish = (id: string) =>
        call(server.baseUrl, 'POST', '/v1/queues/gone/jobs', { body: { id } });
      expect((await publish('before')).status).toBe(200);
      // A caller's own statement naming a table of its own that is not there keeps its error.
      const own = await broker
        .transaction((tx) => tx.query('SELECT * FROM orders_not_there'))
        .catch((caught: unknown) => caught);
      expect(own).not.toBeInstanceOf(StorageUnavailableError);
      expect((own as { code?: string }).code).toBe('42P01');
      await db.admin(`DROP DATABASE ${db.name} WITH (FORCE)`);
      await db.admin(`CREATE DATABASE ${db.name}`);
      const refusal = broker.handle('gone').publish({ id: 'a' });
      await expect(refusal).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(refusal).rejects.toThrow(/tables are gone/);
      await expect(broker.listQueues()).rejects.toBeInstanceOf(StorageUnavailableError);
      const refused = await publish('during');
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('STORAGE_UNAVAILABLE');
      const ready = await call(server.baseUrl, 'GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.error.code).toBe('STORAGE_UNAVAILABLE');
    } finally {
      await broker.close();
      await server.close();
    }
  });

  it('the search_path changed under the process: the error names it rather than only a database made again, and calls go on once it is put back', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const db = database();
    const broker = await open(db.url());
    try {
      const queue = await broker.queue('search-path');
      await queue.publish({ id: 'before' });
      // New sessions no longer find leaseq's tables; they are where they were.
      await db.admin(`ALTER DATABASE ${db.name} SET search_path = leaseq_elsewhere`);
      await db.terminate();
      const refusal = await queue.publish({ id: 'during' }).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(StorageUnavailableError);
      expect((refusal as Error).message).toMatch(/tables are gone/);
      expect((refusal as Error).message).toMatch(/search_path changed/);
      await db.admin(`ALTER DATABASE ${db.name} RESET search_path`);
      await db.terminate();
      for (let attempt = 0; ; attempt++) {
        try {
          await queue.publish({ id: 'after' });
          break;
        } catch (error) {
          if (attempt >= 20) throw error;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      expect((await queue.inspect()).ready).toEqual(['before', 'after']);
    } finally {
      await db.admin(`ALTER DATABASE ${db.name} RESET search_path`);
      await broker.close();
    }
  });
});
