import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mayHaveTakenEffect, open, StorageUnavailableError } from '../../src/index.js';
import { postgresSkipReason } from '../crash/postgres.js';
import { type ScratchDatabase, scratchDatabase } from './postgres-scratch.js';

/**
 * A backend terminated under a one-statement reserve or ack (an operator's
 * pg_terminate_backend, a server shutting down) fails that call, saying it may or may not have
 * taken effect (the statement commits by itself); the calls queued behind it run on another
 * connection, not on the dead one.
 */
let skip: string | undefined;
let scratch: ScratchDatabase | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip === undefined) scratch = await scratchDatabase('backend_terminated');
});

afterAll(async () => {
  await scratch?.drop();
});

function url(): string {
  if (scratch === undefined) throw new Error('no scratch database');
  return scratch.url();
}

/** Another connection holding the jobs table's lock until `release()`, and an admin's. */
async function holdJobsTable(): Promise<{
  admin: pg.Client;
  release: () => Promise<void>;
}> {
  const holder = new pg.Client({ connectionString: url() });
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE leaseq_jobs IN ACCESS EXCLUSIVE MODE');
  const admin = new pg.Client({ connectionString: url() });
  await admin.connect();
  return {
    admin,
    release: async () => {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
      await admin.end();
    },
  };
}

/** The pid of the backend running `pattern`, once it waits for a lock. */
async function waitingBackend(admin: pg.Client, pattern: string): Promise<number> {
  for (;;) {
    const { rows } = await admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`,
      [pattern],
    );
    if (rows[0] !== undefined) return rows[0].pid;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('PostgreSQL: a backend terminated under a one-statement call', () => {
  for (const kind of ['ack', 'reserve'] as const) {
    it(`fails that ${kind} alone: the call queued behind it runs on a new connection`, async (context) => {
      if (skip !== undefined) context.skip(skip);
      const broker = await open(url());
      try {
        const queue = await broker.queue(`terminated-${kind}`);
        await queue.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
        const taken = await queue.receive({ max: 2 });
        expect(taken).toHaveLength(2);
        const [first, second] = taken.map((delivery) => delivery.token);
        const lock = await holdJobsTable();
        let cut: Promise<unknown>;
        let behind: Promise<unknown>;
        try {
          cut = (kind === 'ack' ? queue.ack(first as number) : queue.receive()).catch(
            (error: unknown) => error,
          );
          const pid = await waitingBackend(
            lock.admin,
            kind === 'ack' ? '%leaseq_ack(%' : '%leaseq_reserve%',
          );
          behind = queue.ack(second as number).catch((error: unknown) => error);
          await lock.admin.query('SELECT pg_terminate_backend($1)', [pid]);
          const error = await cut;
          expect(error).toBeInstanceOf(StorageUnavailableError);
          // The statement commits by itself: cut under way, it cannot be known not to have.
          expect((error as Error).message).toMatch(/may or may not have taken effect/);
          expect(mayHaveTakenEffect(error)).toBe(true);
        } finally {
          await lock.release();
        }
        expect(await behind).toBe(true);
        // Nothing half-done: the cut call took no effect, and the queue goes on.
        const stats = await queue.stats();
        expect(stats.active + stats.ready).toBe(2);
        expect(await queue.ack(first as number)).toBe(true);
      } finally {
        await broker.close();
      }
    });
  }
});
