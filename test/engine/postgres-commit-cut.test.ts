import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRemote } from '../../src/client/index.js';
import {
  mayHaveTakenEffect,
  open,
  type PublishInput,
  StorageUnavailableError,
} from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { postgresSkipReason } from '../crash/postgres.js';
import { TcpProxy } from '../faults/tcp-proxy.js';
import { type ScratchDatabase, scratchDatabase } from './postgres-scratch.js';

/**
 * A connection that breaks once a call's COMMIT went out (its backend terminated there, the
 * socket cut) leaves the call's outcome unknown: PostgreSQL may have committed it before the
 * break. Its error says so, in words and as `mayHaveTakenEffect`; a call whose connection broke
 * before its COMMIT went out certainly took no effect, and its error says nothing of the kind.
 *
 * The fault is put exactly at the commit by a trigger of the test's own on the jobs table,
 * deferred to the commit, that waits for an advisory lock the test holds: the backend then
 * waits inside the COMMIT, and is terminated there. Not deferred, the same trigger holds the
 * publish's INSERT, before its commit.
 */
let skip: string | undefined;
let scratch: ScratchDatabase | undefined;

/** The advisory lock key the trigger waits for. */
const HOLD_KEY = 744_599;

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip === undefined) scratch = await scratchDatabase('commit_cut');
});

afterAll(async () => {
  await scratch?.drop();
});

function url(params?: Record<string, string>): string {
  if (scratch === undefined) throw new Error('no scratch database');
  return scratch.url(params);
}

/**
 * A trigger on the jobs of `queue` that waits for HOLD_KEY: at the commit (`deferred`), or in
 * the INSERT itself. An admin connection holds the key until `release()`.
 */
async function holdJobsOf(
  queue: string,
  deferred: boolean,
): Promise<{ admin: pg.Client; release: () => Promise<void> }> {
  const admin = new pg.Client({ connectionString: url() });
  await admin.connect();
  const name = `hold_${queue.replaceAll('-', '_')}`;
  await admin.query(`CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_advisory_xact_lock_shared(${HOLD_KEY}); RETURN NULL; END $$`);
  await admin.query(
    `CREATE CONSTRAINT TRIGGER ${name} AFTER INSERT ON leaseq_jobs
     ${deferred ? 'DEFERRABLE INITIALLY DEFERRED' : 'NOT DEFERRABLE'}
     FOR EACH ROW WHEN (NEW.queue = '${queue}') EXECUTE FUNCTION ${name}()`,
  );
  await admin.query('SELECT pg_advisory_lock($1)', [HOLD_KEY]);
  return {
    admin,
    release: async () => {
      await admin.query('SELECT pg_advisory_unlock_all()');
      await admin.query(`DROP TRIGGER ${name} ON leaseq_jobs`);
      await admin.end();
    },
  };
}

/** The pid of the backend waiting for HOLD_KEY, and the statement it runs, once it waits. */
async function heldBackend(admin: pg.Client): Promise<{ pid: number; query: string }> {
  for (;;) {
    const { rows } = await admin.query<{ pid: number }>(
      `SELECT l.pid FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
       WHERE a.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted
         AND l.objid = $1`,
      [HOLD_KEY],
    );
    const pid = rows[0]?.pid;
    if (pid !== undefined) {
      // Its statement read again, after the wait was seen: one query reads pg_stat_activity at
      // its first access and pg_locks later, so the same query may pair the wait with the
      // statement before the one that waits.
      const { rows: running } = await admin.query<{ query: string }>(
        'SELECT query FROM pg_stat_activity WHERE pid = $1',
        [pid],
      );
      return { pid, query: running[0]?.query ?? '' };
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Publishes `input` to `queue` (named `name`) while the trigger holds it (at the commit when
 * `deferred`), terminates the backend where it waits, and answers what the publish threw.
 * `where` checks the statement the backend was held in.
 */
async function publishTerminated(
  queue: { publish(input: PublishInput): Promise<unknown> },
  name: string,
  deferred: boolean,
  input: PublishInput,
  where: (query: string) => void = () => undefined,
): Promise<unknown> {
  const hold = await holdJobsOf(name, deferred);
  try {
    const publish = queue.publish(input).catch((failure: unknown) => failure);
    const backend = await heldBackend(hold.admin);
    where(backend.query);
    await hold.admin.query('SELECT pg_terminate_backend($1)', [backend.pid]);
    return await publish;
  } finally {
    await hold.release();
  }
}

/** A failure that says nothing of a commit under way: the storage unavailable, and no more. */
function expectNotTaken(error: unknown): void {
  expect(error).toBeInstanceOf(StorageUnavailableError);
  expect((error as Error).message).not.toMatch(/may or may not/);
  expect((error as StorageUnavailableError).mayHaveTakenEffect).toBeUndefined();
  expect(mayHaveTakenEffect(error)).toBe(false);
}

/** Resolves once the backend `pid` has ended. */
async function ended(admin: pg.Client, pid: number): Promise<void> {
  for (;;) {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
    if (rowCount === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('PostgreSQL: a connection broken under a call, at its commit or before it', () => {
  it('a publish whose backend ends at its COMMIT fails saying it may or may not have taken effect', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(url());
    try {
      const queue = await broker.queue('at-commit');
      const error = await publishTerminated(
        queue,
        'at-commit',
        true,
        { payload: 'no id' },
        (query) =>
          // Held inside the message that ends with the COMMIT, not in a statement before it.
          expect(query).toMatch(/COMMIT$/),
      );
      expect(error).toBeInstanceOf(StorageUnavailableError);
      expect((error as Error).message).toMatch(/may or may not have taken effect/);
      expect((error as StorageUnavailableError).mayHaveTakenEffect).toBe(true);
      expect(mayHaveTakenEffect(error)).toBe(true);
      // The queue goes on, on another connection.
      await expect(queue.publish({ id: 'after' })).resolves.toMatchObject({ duplicate: false });
    } finally {
      await broker.close();
    }
  });

  it('a publish whose socket is cut at its COMMIT fails as maybe done, and was done after all', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const direct = new URL(url({ options: '-c client_connection_check_interval=0' }));
    const proxy = new TcpProxy(Number(direct.port));
    direct.host = await proxy.listen();
    const broker = await open(direct.toString());
    try {
      const queue = await broker.queue('socket-cut');
      const hold = await holdJobsOf('socket-cut', true);
      let error: unknown;
      try {
        const publish = queue.publish({ payload: 'no id' }).catch((failure: unknown) => failure);
        const backend = await heldBackend(hold.admin);
        expect(backend.query).toMatch(/COMMIT$/);
        proxy.cut();
        error = await publish;
        // Let go, the backend commits before it finds its client gone.
        await hold.admin.query('SELECT pg_advisory_unlock($1)', [HOLD_KEY]);
        await ended(hold.admin, backend.pid);
      } finally {
        await hold.release();
      }
      expect(error).toBeInstanceOf(StorageUnavailableError);
      expect((error as Error).message).toMatch(/may or may not have taken effect/);
      expect(mayHaveTakenEffect(error)).toBe(true);
      expect((await queue.stats()).ready).toBe(1);
    } finally {
      await broker.close();
      await proxy.close();
    }
  });

  for (const transport of ['http', 'stream'] as const) {
    it(`a remote publish over ${transport} whose backend ends at its COMMIT fails as maybe done at the client`, async (context) => {
      if (skip !== undefined) context.skip(skip);
      const broker = await open(url());
      const app = await createApp({
        receiptSecret: 'test-secret-of-at-least-32-characters',
        broker,
      });
      const remote = await openRemote(await app.listen({ host: '127.0.0.1', port: 0 }), {
        transport,
      });
      const name = `remote-${transport}`;
      try {
        const queue = await remote.queue(name);
        const error = await publishTerminated(queue, name, true, { payload: 'no id' });
        expect(error).toBeInstanceOf(StorageUnavailableError);
        expect((error as Error).message).toMatch(/may or may not have taken effect/);
        expect(mayHaveTakenEffect(error)).toBe(true);
      } finally {
        await remote.close();
        await app.close();
        await broker.close();
      }
    });
  }

  it('a publish whose backend ends before its COMMIT fails saying nothing of the kind, and took no effect', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(url());
    try {
      const queue = await broker.queue('before-commit');
      const error = await publishTerminated(queue, 'before-commit', false, { id: 'cut' }, (query) =>
        expect(query).not.toMatch(/COMMIT/),
      );
      expectNotTaken(error);
      expect(await queue.job('cut')).toBeUndefined();
    } finally {
      await broker.close();
    }
  });

  it('a transaction whose backend ended before its COMMIT fails saying nothing of the kind, and took no effect', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(url());
    try {
      const queue = await broker.queue('tx-before-commit');
      const error = await broker
        .transaction(async (tx) => {
          await tx.publish('tx-before-commit', { id: 'in-tx' });
          // The backend ends under a statement of the work, which catches that and goes on.
          await tx.run('SELECT pg_terminate_backend(pg_backend_pid())').catch(() => undefined);
        })
        .then(
          () => undefined,
          (failure: unknown) => failure,
        );
      expectNotTaken(error);
      expect(await queue.job('in-tx')).toBeUndefined();
      // The broker goes on, on another connection.
      await expect(queue.publish({ id: 'after' })).resolves.toMatchObject({ duplicate: false });
    } finally {
      await broker.close();
    }
  });

  it('a transaction that went on after a statement failing with a connection-ending code, its connection alive, commits', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(url());
    try {
      const queue = await broker.queue('tx-relayed-code');
      await broker.transaction(async (tx) => {
        await tx.publish('tx-relayed-code', { id: 'before' });
        await tx.run('SAVEPOINT s');
        // As dblink or postgres_fdw relay a remote backend's end: an ERROR with its code, this
        // connection alive. The work rolls back to the savepoint, as the docs say, and goes on.
        await tx
          .run(`DO $$ BEGIN RAISE EXCEPTION 'remote gone' USING ERRCODE = '57P01'; END $$`)
          .catch(() => undefined);
        await tx.run('ROLLBACK TO SAVEPOINT s');
        await tx.publish('tx-relayed-code', { id: 'after' });
      });
      expect(await queue.job('before')).toBeDefined();
      expect(await queue.job('after')).toBeDefined();
    } finally {
      await broker.close();
    }
  });
});
