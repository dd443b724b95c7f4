import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngine, StorageUnavailableError } from '../../src/index.js';
import { postgresSkipReason } from '../crash/postgres.js';
import { type ScratchDatabase, scratchDatabase } from './postgres-scratch.js';

/**
 * The database's clock, read by a Broker at open and every 10 s after, fails as the storage's
 * failure when the database cannot be reached: typed (StorageUnavailableError, naming the
 * target), as every other call of the engine, never a raw driver error.
 */
let skip: string | undefined;
let scratch: ScratchDatabase | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip === undefined) scratch = await scratchDatabase('storage_time');
});

afterAll(async () => {
  await scratch?.drop();
});

describe('PostgreSQL: reading the database clock', () => {
  it('fails with StorageUnavailableError while the database takes no connections', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const db = scratch as ScratchDatabase;
    const engine = await openEngine(db.url());
    try {
      expect(Number.isSafeInteger(await engine.storageTime?.())).toBe(true);
      await db.admin(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS false`);
      await db.terminate();
      const failure = await engine.storageTime?.().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(StorageUnavailableError);
      expect((failure as Error).message).toContain(db.name);
      await db.admin(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`);
      expect(Number.isSafeInteger(await engine.storageTime?.())).toBe(true);
    } finally {
      await db.admin(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`);
      await engine.close();
    }
  });
});
