import { join } from 'node:path';
import { open } from '../../src/index.js';
import { postgresUrl } from '../conformance/engines.js';
import { temporaryDirectory } from '../temporary-directory.js';

/** One storage a server test runs over; `url` is undefined when it is skipped (`skipReason`). */
export interface ServerStorage {
  name: 'memory' | 'sqlite' | 'postgres';
  url: string;
  skipReason: string | undefined;
}

/**
 * memory:, a fresh SQLite file, and the test PostgreSQL database (skipped only when it is
 * unreachable outside CI). Call once per test file, at the top (top-level await).
 */
export async function serverStorages(): Promise<ServerStorage[]> {
  const dir = temporaryDirectory('leaseq-server-');
  return [
    { name: 'memory', url: 'memory:', skipReason: undefined },
    { name: 'sqlite', url: `sqlite:${join(dir, 'leaseq.db')}`, skipReason: undefined },
    { name: 'postgres', url: postgresUrl(), skipReason: await postgresSkipReason() },
  ];
}

/** Why PostgreSQL tests are skipped (unreachable outside CI), or undefined when they run. */
export async function postgresSkipReason(): Promise<string | undefined> {
  try {
    await (await open(postgresUrl())).close();
    return undefined;
  } catch (error) {
    if (process.env.CI === 'true') throw error;
    return `PostgreSQL unreachable (${(error as Error).message})`;
  }
}
