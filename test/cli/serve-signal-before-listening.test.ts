import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { postgresSkipReason } from '../crash/postgres.js';
import { type ScratchDatabase, scratchDatabase } from '../engine/postgres-scratch.js';

// src/cli/main.ts as a real process, run from the sources: `serve` whose start waits for the
// storage (another process holds the migration lock) is told to stop before it listens.
const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
/** The advisory lock a PostgreSQL migration takes (POSTGRES_DIALECT.migrationLock). */
const MIGRATION_LOCK = 744501;

let skip: string | undefined;
let scratch: ScratchDatabase | undefined;
const children: ChildProcess[] = [];

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip === undefined) scratch = await scratchDatabase('serve_signal');
});

afterEach(() => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

afterAll(async () => {
  await scratch?.drop();
});

function exited(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode });
    } else child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A port free now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('leaseq serve told to stop before it listens', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`ends at once (${signal}) while its start waits for the migration lock another process holds`, async (context) => {
      if (skip !== undefined) context.skip(skip);
      const db = scratch as ScratchDatabase;
      const holder = new pg.Client({ connectionString: db.url() });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
        const port = await freePort();
        const cli = spawn(
          process.execPath,
          ['--import', 'tsx', MAIN, 'serve', '--port', String(port), '--log-level', 'warn'],
          { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LEASEQ_STORAGE: db.url() } },
        );
        children.push(cli);
        const exit = exited(cli);
        // Its migration waits for the lock: the start is under way, and cannot end by itself.
        const deadline = Date.now() + 20_000;
        for (;;) {
          const { rows } = await holder.query(
            `SELECT 1 FROM pg_locks WHERE locktype = $1 AND objid = $2 AND NOT granted
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
            ['advisory', MIGRATION_LOCK],
          );
          if (rows.length > 0) break;
          if (Date.now() > deadline) throw new Error('serve never waited for the migration lock');
          await sleep(25);
        }
        cli.kill(signal);
        const ended = await Promise.race([exit, sleep(5_000).then(() => 'still running')]);
        expect(ended).toEqual({ code: null, signal });
      } finally {
        await holder.query('ROLLBACK').catch(() => undefined);
        await holder.end();
      }
    }, 40_000);
  }
});
