import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { postgresSkipReason, withPostgresClient } from '../crash/postgres.js';
import { scratchDatabase } from './postgres-scratch.js';

const skip = await postgresSkipReason();

async function exists(name: string): Promise<boolean> {
  const { rowCount } = await withPostgresClient((client) =>
    client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]),
  );
  return rowCount !== 0;
}

describe.skipIf(skip !== undefined)('a scratch database', () => {
  it('is dropped while clients a failed test left behind keep connecting to it again', async () => {
    const scratch = await scratchDatabase('reconnecting');
    let connecting = true;
    const reconnect = async () => {
      while (connecting) {
        const client = new pg.Client({ connectionString: scratch.url() });
        client.on('error', () => {});
        try {
          await client.connect();
          await client.query('SELECT pg_sleep(5)');
        } catch {
          // Ended by the drop, or refused: connect again at once.
        } finally {
          await client.end().catch(() => {});
        }
      }
    };
    const clients = Array.from({ length: 12 }, reconnect);
    let failure: unknown;
    let left: boolean;
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      await scratch.drop().catch((error: unknown) => {
        failure = error;
      });
      left = await exists(scratch.name);
    } finally {
      connecting = false;
      await Promise.all(clients);
      await withPostgresClient((client) => client.query(`DROP DATABASE IF EXISTS ${scratch.name}`));
    }
    expect({ failure, left }).toEqual({ failure: undefined, left: false });
  });
});
