import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Broker,
  ConflictError,
  mayHaveTakenEffect,
  open,
  openEngine,
  StorageLockedError,
  StorageUnavailableError,
} from '../../src/index.js';
import { postgresSkipReason, withPostgresClient } from '../crash/postgres.js';
import { call, startTestServer } from '../server/helpers.js';
import { type ScratchDatabase, scratchDatabase } from './postgres-scratch.js';

/**
 * What PostgreSQL refuses for the state it is in, not for the statement: a statement it timed
 * out (statement_timeout, lock_timeout), a database that takes no writes (a standby, or
 * default_transaction_read_only after a failover), a transaction already aborted. Each reaches
 * callers as a typed error, and the server as a 503, never as a raw driver error and 500.
 */
let skip: string | undefined;
let scratch: ScratchDatabase | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip === undefined) scratch = await scratchDatabase('refusals');
});

afterAll(async () => {
  await scratch?.drop();
});

function database(): ScratchDatabase {
  if (scratch === undefined) throw new Error('no scratch database');
  return scratch;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A connection setting for every session of a URL (`-c name=value`). */
const setting = (name: string, value: string) => ({ options: `-c ${name}=${value}` });

/** Runs `work` while another connection holds the transaction-scoped advisory lock `key`. */
async function holdingAdvisoryLock<T>(key: number, work: () => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: database().url() });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [key]);
    return await work();
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    await client.end();
  }
}

/**
 * Runs `work` while a caller's transaction of another broker holds queue `name`'s lock (it
 * publishes there, then waits 800 ms before committing).
 */
async function whileQueueHeld<T>(holder: Broker, name: string, work: () => Promise<T>) {
  let held!: () => void;
  const locked = new Promise<void>((resolve) => {
    held = resolve;
  });
  const holding = holder.transaction(async (tx) => {
    await tx.publish(name, { id: 'holder' });
    held();
    await sleep(800);
  });
  await locked;
  try {
    return await work();
  } finally {
    await holding;
  }
}

/** Reads until one succeeds: after its connections were ended, the pool has made new ones. */
async function readAgain(broker: Broker): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await broker.listQueues();
      return;
    } catch (error) {
      if (attempt >= 20) throw error;
      await sleep(50);
    }
  }
}

/**
 * A role of its own that may use leaseq's tables in the scratch database (migrated by its owner
 * first), as an application's role is granted; its URL is passed to `use`, with `sql` to run
 * statements there as the owner. Dropped after. 'no-role-rights' when the tests' user may not
 * create roles.
 */
async function withAppRole(
  use: (url: string, password: string, sql: (text: string) => Promise<void>) => Promise<void>,
): Promise<'no-role-rights' | undefined> {
  const db = database();
  const sql = async (text: string) => {
    await withPostgresClient((client) => client.query(text), db.url());
  };
  await (await openEngine(db.url())).close();
  const role = `lq_app_${process.pid}_${Math.floor(Math.random() * 36 ** 6).toString(36)}`;
  const password = `pw_${Math.floor(Math.random() * 36 ** 8).toString(36)}`;
  try {
    await sql(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
  } catch (error) {
    if ((error as { code?: unknown }).code === '42501') return 'no-role-rights';
    throw error;
  }
  try {
    await sql(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`);
    const url = new URL(db.url());
    url.username = role;
    url.password = password;
    await use(url.toString(), password, sql);
  } finally {
    await sql(`DROP OWNED BY ${role}`);
    await sql(`DROP ROLE ${role}`);
  }
  return undefined;
}

describe('PostgreSQL: refusals for the database state are typed', () => {
  it('privileges revoked from the role while open: StorageUnavailableError naming them, nothing written, 503 over HTTP and on /readyz, and calls go on once granted back', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const refused = await withAppRole(async (url, password, sql) => {
      const server = await startTestServer({ url });
      const broker = await open(url);
      try {
        const queue = await broker.queue('revoked');
        await queue.publish({ id: 'held' });
        const [held] = await queue.receive();
        const role = new URL(url).username;
        await sql(`REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${role}`);
        for (const refusal of [
          await queue.publish({ id: 'during' }).catch((error: unknown) => error),
          // A reserve or ack commits by itself: refused, it did not, and says so.
          await queue.ack(held?.token ?? 0).catch((error: unknown) => error),
        ]) {
          expect(refusal).toBeInstanceOf(StorageUnavailableError);
          expect((refusal as Error).message).toMatch(
            /refuses leaseq's role a privilege \(permission denied for \w+ leaseq_\w+\).*grant them back; nothing was written$/,
          );
          expect((refusal as Error).message).not.toContain(password);
          expect(mayHaveTakenEffect(refusal)).toBe(false);
        }
        const answer = await call(server.baseUrl, 'POST', '/v1/queues/revoked/jobs', {
          body: { id: 'over-http' },
        });
        expect(answer.status).toBe(503);
        expect(answer.body.error).toEqual({
          code: 'STORAGE_UNAVAILABLE',
          message: 'the storage is unavailable',
        });
        const ready = await call(server.baseUrl, 'GET', '/readyz');
        expect(ready.status).toBe(503);
        expect(ready.body.error.code).toBe('STORAGE_UNAVAILABLE');
        // Granted back: the same processes go on, with no restart.
        await sql(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`);
        expect((await call(server.baseUrl, 'GET', '/readyz')).status).toBe(200);
        expect(await queue.ack(held?.token ?? 0)).toBe(true);
        const after = await call(server.baseUrl, 'POST', '/v1/queues/revoked/jobs', {
          body: { id: 'after' },
        });
        expect(after.status).toBe(200);
        expect((await queue.inspect()).ready).toEqual(['after']);
      } finally {
        await broker.close();
        await server.close();
      }
    });
    if (refused !== undefined) context.skip('the tests user may not create roles');
  });

  for (const name of ['statement_timeout', 'lock_timeout'] as const) {
    it(`a statement the database timed out (${name}): StorageLockedError, and 503 over HTTP`, async (context) => {
      if (skip !== undefined) context.skip(skip);
      const queue = `timeout-${name}`;
      const holder = await open(database().url());
      const victim = await open(database().url(setting(name, '150')));
      const server = await startTestServer({ url: database().url(setting(name, '150')) });
      try {
        await holder.queue(queue);
        await whileQueueHeld(holder, queue, async () => {
          const refusal = victim
            .handle(queue)
            .publish({ id: 'victim' })
            .catch((error: unknown) => error);
          const answer = await call(server.baseUrl, 'POST', `/v1/queues/${queue}/jobs`, {
            body: { id: 'over-http' },
          });
          const error = await refusal;
          expect(error).toBeInstanceOf(StorageLockedError);
          expect((error as Error).message).toMatch(/timed the statement out/);
          expect(answer.status).toBe(503);
          expect(answer.body.error.code).toBe('STORAGE_LOCKED');
        });
        // Nothing of the refused calls was written.
        expect((await holder.handle(queue).stats()).ready).toBe(1);
      } finally {
        await server.close();
        await victim.close();
        await holder.close();
      }
    });

    it(`open() whose migration the database times out (${name}): StorageLockedError`, async (context) => {
      if (skip !== undefined) context.skip(skip);
      // Another process migrating holds the migration lock longer than the setting lets one wait.
      const failure = await holdingAdvisoryLock(744501, () =>
        openEngine(database().url(setting(name, '150'))).then(
          async (engine) => {
            await engine.close();
            return 'opened';
          },
          (error: unknown) => error,
        ),
      );
      expect(failure).toBeInstanceOf(StorageLockedError);
      expect((failure as Error).message).toContain(database().name);
    });
  }

  it('open() of a database that takes no writes: StorageUnavailableError saying so', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const failure = openEngine(database().url(setting('default_transaction_read_only', 'on')));
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(failure).rejects.toThrow(/takes no writes/);
  });

  it('a database turned read-only while open: calls that write fail with StorageUnavailableError (503 over HTTP) until it takes writes again', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const db = database();
    const server = await startTestServer({ url: db.url() });
    const broker = await open(db.url());
    try {
      await broker.queue('read-only');
      const publish = (id: string) =>
        call(server.baseUrl, 'POST', '/v1/queues/read-only/jobs', { body: { id } });
      expect((await publish('before')).status).toBe(200);
      // As after a failover to a standby: new sessions take no writes.
      await db.admin(`ALTER DATABASE ${db.name} SET default_transaction_read_only = on`);
      await db.terminate();
      // Reads are served on the new connections: the storage answers, but takes no writes.
      await readAgain(broker);
      await readAgain(server.broker);
      const refusal = broker.handle('read-only').publish({ id: 'a' });
      await expect(refusal).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(refusal).rejects.toThrow(/takes no writes/);
      const refused = await publish('during');
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('STORAGE_UNAVAILABLE');
      await db.admin(`ALTER DATABASE ${db.name} RESET default_transaction_read_only`);
      await db.terminate();
      await readAgain(server.broker);
      expect((await publish('after')).status).toBe(200);
    } finally {
      await db.admin(`ALTER DATABASE ${db.name} RESET default_transaction_read_only`);
      await broker.close();
      await server.close();
    }
  });

  it('a database that takes writes again: writes go on over the pool, with no restart, though its sessions were opened while it took none', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const db = database();
    const broker = await open(db.url());
    try {
      await broker.queue('read-only-sessions');
      const publish = (id: string) => broker.handle('read-only-sessions').publish({ id });
      await publish('before');
      // A failover: the sessions the pool opens meanwhile reach a database that takes no
      // writes (a standby), and stay read-only for as long as they live.
      await db.admin(`ALTER DATABASE ${db.name} SET default_transaction_read_only = on`);
      await db.terminate();
      await readAgain(broker);
      await expect(publish('during')).rejects.toThrow(/takes no writes/);
      // The database takes writes again (the new primary), and no connection is ended: a
      // session refused a write is not used again, so a new one, which takes them, is made.
      await db.admin(`ALTER DATABASE ${db.name} RESET default_transaction_read_only`);
      // A session opened within the last second is kept (see the next test): tried again
      // until the pool's sessions are older than that.
      const outcomes: string[] = [];
      for (let attempt = 0; attempt < 40 && outcomes.at(-1) !== 'published'; attempt += 1) {
        if (attempt > 0) await sleep(100);
        outcomes.push(
          await publish(`after-${attempt}`).then(
            () => 'published',
            (error: Error) => error.message,
          ),
        );
      }
      expect(outcomes.at(-1)).toBe('published');
    } finally {
      await db.admin(`ALTER DATABASE ${db.name} RESET default_transaction_read_only`);
      await broker.close();
    }
  });

  it('a database that takes no writes: each refused write does not open a new session', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const db = database();
    const sessions = () =>
      withPostgresClient(async (client) => {
        const { rows } = await client.query<{ sessions: string }>(
          'SELECT sessions FROM pg_stat_database WHERE datname = $1',
          [db.name],
        );
        return Number(rows[0]?.sessions);
      });
    const broker = await open(db.url());
    try {
      await broker.queue('refused-writes');
      await db.admin(`ALTER DATABASE ${db.name} SET default_transaction_read_only = on`);
      await db.terminate();
      await readAgain(broker);
      const before = await sessions();
      // A standby during a failover, with writes coming in: each refused write replacing its
      // session made PostgreSQL start a backend per write, and every call waited for one.
      const refused: unknown[] = [];
      for (let index = 0; index < 40; index += 1) {
        await broker
          .handle('refused-writes')
          .publish({ id: `w-${index}` })
          .catch((error: unknown) => refused.push(error));
      }
      expect(refused).toHaveLength(40);
      expect(refused.every((error) => error instanceof StorageUnavailableError)).toBe(true);
      expect((await sessions()) - before).toBeLessThan(20);
    } finally {
      await db.admin(`ALTER DATABASE ${db.name} RESET default_transaction_read_only`);
      await broker.close();
    }
  });

  it('the role dropped and made again under the same name while open: calls go on as the new role, with no restart', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const refused = await withAppRole(async (url, password, sql) => {
      const broker = await open(url);
      try {
        const queue = await broker.queue('role-made-again');
        await queue.publish({ id: 'before' });
        const role = new URL(url).username;
        // Its sessions stay open, under the role that is gone: every privilege is refused there.
        await sql(`DROP OWNED BY ${role}`);
        await sql(`DROP ROLE ${role}`);
        await sql(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
        await sql(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`);
        const refusal = await queue.publish({ id: 'refused' }).catch((error: unknown) => error);
        expect(refusal).toBeInstanceOf(StorageUnavailableError);
        expect(mayHaveTakenEffect(refusal)).toBe(false);
        // A connection refused so is not used again: a call opens one as the new role (after
        // at most as many refusals as the pool had connections: four).
        for (let attempt = 1; ; attempt++) {
          const failure = await queue.publish({ id: 'after' }).then(
            () => undefined,
            (error: unknown) => error,
          );
          if (failure === undefined) break;
          if (attempt >= 4) throw failure;
        }
        expect((await queue.inspect()).ready).toEqual(['before', 'after']);
      } finally {
        await broker.close();
      }
    });
    if (refused !== undefined) context.skip('the tests user may not create roles');
  });

  it('a role refused EXECUTE on pg_notify: open() fails with StorageUnavailableError naming it, not a raw driver error', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const refused = await withAppRole(async (url, password, sql) => {
      await sql('REVOKE EXECUTE ON FUNCTION pg_notify(text, text) FROM PUBLIC');
      try {
        const failure = await openEngine(url).then(
          async (engine) => {
            await engine.close();
            return undefined;
          },
          (error: unknown) => error,
        );
        expect(failure).toBeInstanceOf(StorageUnavailableError);
        expect((failure as Error).message).toMatch(
          /refuses leaseq's role a privilege \(permission denied for function pg_notify\).*pg_notify/,
        );
        expect((failure as Error).message).not.toContain(password);
      } finally {
        await sql('GRANT EXECUTE ON FUNCTION pg_notify(text, text) TO PUBLIC');
      }
    });
    if (refused !== undefined) context.skip('the tests user may not create roles');
  });

  it('a caller transaction refused a privilege on a table of its own: its error as PostgreSQL gave it, and its connection used again', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const refused = await withAppRole(async (url, _password, sql) => {
      // Made after the role's grants: the role may not use it.
      await sql('CREATE TABLE own_secret (x INTEGER)');
      const broker = await open(url);
      try {
        const queue = await broker.queue('own-refusal');
        const backends: number[] = [];
        for (let round = 0; round < 2; round++) {
          await broker.transaction(async (tx) => {
            await tx.run('SAVEPOINT attempt');
            const error = await tx
              .run('INSERT INTO own_secret VALUES (1)')
              .catch((caught: unknown) => caught);
            expect((error as { code?: string }).code).toBe('42501');
            await tx.run('ROLLBACK TO SAVEPOINT attempt');
            await tx.publish('own-refusal', { id: `after-${round}` });
            const [row] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
            backends.push(Number(row?.pid));
          });
        }
        // The statement's own refusal, not the role's on leaseq's tables: the session goes on.
        expect(backends[1]).toBe(backends[0]);
        const thrown = await broker
          .transaction((tx) => tx.query('SELECT * FROM own_secret'))
          .catch((error: unknown) => error);
        expect(thrown).not.toBeInstanceOf(StorageUnavailableError);
        expect((thrown as { code?: string }).code).toBe('42501');
        expect((thrown as Error).message).toBe('permission denied for table own_secret');
        expect((await queue.inspect()).ready).toEqual(['after-0', 'after-1']);
      } finally {
        await broker.close();
      }
    });
    if (refused !== undefined) context.skip('the tests user may not create roles');
  });

  it('an ack while the database takes no writes: refused as not done, not as one that may have taken effect; acked once it takes writes again', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const db = database();
    const server = await startTestServer({ url: db.url() });
    const broker = await open(db.url());
    try {
      const queue = await broker.queue('read-only-ack');
      await queue.publish({ id: 'in-process' });
      await queue.publish({ id: 'over-http' });
      const [held] = await queue.receive();
      const received = await call(server.baseUrl, 'POST', '/v1/queues/read-only-ack/receive', {
        body: {},
      });
      const receipt = received.body.deliveries[0].receipt;
      await db.admin(`ALTER DATABASE ${db.name} SET default_transaction_read_only = on`);
      await db.terminate();
      await readAgain(broker);
      await readAgain(server.broker);
      // An ack commits by itself: the database refused it, so it did not.
      const refusal = await queue.ack(held?.token ?? 0).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(StorageUnavailableError);
      expect((refusal as Error).message).toMatch(/takes no writes/);
      expect((refusal as Error).message).not.toMatch(/may or may not have taken effect/);
      expect(mayHaveTakenEffect(refusal)).toBe(false);
      const refused = await call(server.baseUrl, 'POST', '/v1/queues/read-only-ack/ack', {
        body: { receipt },
      });
      expect(refused.status).toBe(503);
      expect(refused.body.error).toEqual({
        code: 'STORAGE_UNAVAILABLE',
        message: 'the storage is unavailable',
      });
      await db.admin(`ALTER DATABASE ${db.name} RESET default_transaction_read_only`);
      await db.terminate();
      await readAgain(broker);
      await readAgain(server.broker);
      expect(await queue.ack(held?.token ?? 0)).toBe(true);
      const acked = await call(server.baseUrl, 'POST', '/v1/queues/read-only-ack/ack', {
        body: { receipt },
      });
      expect(acked.body).toEqual({ acked: true });
      expect((await queue.stats()).acks).toBe(2);
    } finally {
      await db.admin(`ALTER DATABASE ${db.name} RESET default_transaction_read_only`);
      await broker.close();
      await server.close();
    }
  });

  it('a statement after a failed one in a caller transaction (25P02): ConflictError, nothing committed', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(database().url());
    try {
      const queue = await broker.queue('aborted');
      const failure = broker
        .transaction(async (tx) => {
          await tx.publish('aborted', { id: 'first' });
          await tx.query('SELECT 1 / 0').catch(() => undefined);
          await tx.publish('aborted', { id: 'second' });
        })
        .catch((error: unknown) => error);
      const error = await failure;
      expect(error).toBeInstanceOf(ConflictError);
      expect((error as Error).message).toMatch(/rolled back/);
      expect((await queue.stats()).ready).toBe(0);
    } finally {
      await broker.close();
    }
  });

  it('values that do not match the placeholders of a statement (08P01): the error of the statement itself, not the database out of reach', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(database().url());
    try {
      for (const values of [[1], [1, 2, 3]]) {
        const error = await broker
          .transaction((tx) => tx.query('SELECT ? AS a, ? AS b', values))
          .catch((caught: unknown) => caught);
        expect(error).not.toBeInstanceOf(StorageUnavailableError);
        expect((error as { code?: string }).code).toBe('08P01');
        expect((error as Error).message).toMatch(/bind message supplies/);
      }
      // The database was reachable all along: the broker goes on.
      expect((await (await broker.queue('placeholders')).stats()).ready).toBe(0);
    } finally {
      await broker.close();
    }
  });
});
