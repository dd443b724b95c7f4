import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { SystemClock } from '../../src/broker/clock.js';
import { StorageUnavailableError } from '../../src/core/index.js';
import { SqlEngine } from '../../src/engine/sql/sql-engine.js';
import { open } from '../../src/index.js';
import { POSTGRES_URL, postgresSkipReason } from '../crash/postgres.js';

// open() on PostgreSQL reads the database's clock once the engine is open: should that read
// fail, no broker is made of the engine, and nothing must be left open behind the error.
let skip: string | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('open() whose first read of the storage clock fails', () => {
  it('closes the engine it opened and fails with that error', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const lost = new StorageUnavailableError('the clock read was cut');
    vi.spyOn(SystemClock.prototype, 'syncTo').mockRejectedValueOnce(lost);
    const close = vi.spyOn(SqlEngine.prototype, 'close');
    await expect(open(POSTGRES_URL)).rejects.toBe(lost);
    expect(close).toHaveBeenCalledTimes(1);
  });
});
