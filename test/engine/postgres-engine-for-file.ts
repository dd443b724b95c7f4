import { afterAll, beforeAll } from 'vitest';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { POSTGRES_URL, postgresSkipReason } from '../crash/postgres.js';

/**
 * One PostgreSQL engine for a test file, opened before its tests and closed after them;
 * `engine` is undefined, and `skip` says why, when the database cannot be used. `name` gives
 * each test queue a name of its own (the database is shared with other runs).
 */
export function postgresEngineForFile(prefix: string): {
  readonly engine: Engine | undefined;
  readonly skip: string | undefined;
  name(label: string): string;
} {
  let engine: Engine | undefined;
  let skip: string | undefined;
  beforeAll(async () => {
    skip = await postgresSkipReason();
    if (skip === undefined) engine = await openEngine(POSTGRES_URL);
  });
  afterAll(async () => {
    await engine?.close();
  });
  return {
    get engine() {
      return engine;
    },
    get skip() {
      return skip;
    },
    name: (label) => `${prefix}-${label}-${process.pid}-${Date.now()}`,
  };
}
