import { existsSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { translateSqliteError } from '../../src/engine/sqlite/sqlite-engine.js';
import { openEngine, SchemaTooNewError, StorageUnavailableError } from '../../src/index.js';
import { postgresUrl, queueName } from '../conformance/engines.js';
import { postgresSkipReason } from '../crash/postgres.js';
import { temporaryDirectory } from '../temporary-directory.js';

// How storage is opened where it is not where or how the default setup puts it.
const dir = temporaryDirectory('leaseq-storage-probe-open-');

describe('SQLite storage opened through a symlink', () => {
  for (const durability of ['fsync', 'os'] as const) {
    it(`publishes and acks succeed and are kept (durability ${durability})`, async () => {
      const real = join(dir, `real-${durability}.db`);
      const link = join(dir, `link-${durability}.db`);
      symlinkSync(real, link);
      const engine = await openEngine(`sqlite:${link}`, { durability });
      try {
        const queue = await engine.queue('jobs');
        await queue.publishBatch(1, [{ id: 'a' }, { id: 'b' }]);
        const [first] = await queue.reserve(2);
        expect(first?.id).toBe('a');
        expect(await queue.ack(3, first?.token ?? 0)).toBe(true);
        // SQLite keeps the WAL beside the file the link points to; none is made beside the link.
        expect(existsSync(`${real}-wal`)).toBe(true);
        expect(existsSync(`${link}-wal`)).toBe(false);
      } finally {
        await engine.close();
      }
      const again = await openEngine(`sqlite:${real}`, { durability });
      try {
        expect((await (await again.queue('jobs')).inspect()).ready).toEqual(['b']);
      } finally {
        await again.close();
      }
    });
  }
});

describe('SQLite: attempt to write a readonly database, said with its cause', () => {
  const readOnly = (code: string) =>
    Object.assign(new Error('attempt to write a readonly database'), { code });

  it('a directory SQLite may not write in (SQLITE_READONLY_DIRECTORY) is named', () => {
    const translated = translateSqliteError(
      readOnly('SQLITE_READONLY_DIRECTORY'),
      'sqlite:/data/queues/x.db',
    );
    expect(translated).toBeInstanceOf(StorageUnavailableError);
    expect((translated as Error).message).toBe(
      "sqlite:/data/queues/x.db cannot be used: attempt to write a readonly database (its directory /data/queues is not writable by this process: SQLite makes the database's -wal and -shm files beside it, so the directory must be writable too)",
    );
  });

  it('otherwise the file and the two beside it are named', () => {
    const translated = translateSqliteError(readOnly('SQLITE_READONLY'), 'sqlite:/data/x.db');
    expect(translated).toBeInstanceOf(StorageUnavailableError);
    expect((translated as Error).message).toBe(
      'sqlite:/data/x.db cannot be used: attempt to write a readonly database (/data/x.db, or its -wal or -shm file beside it, is not writable by this process)',
    );
  });
});

/**
 * A role of its own that may use the tables of `schema` and nothing more (no CREATE there),
 * as a database's owner grants an application; its URL is passed to `use`. Dropped after.
 * Undefined when the tests' user may not create roles.
 */
async function withUserOnly(
  admin: pg.Client,
  schema: string,
  use: (url: string) => Promise<void>,
): Promise<'no-role-rights' | undefined> {
  const role = `lq_user_${process.pid}_${Math.floor(Math.random() * 36 ** 6).toString(36)}`;
  const password = `pw_${Math.floor(Math.random() * 36 ** 8).toString(36)}`;
  try {
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
  } catch (error) {
    if ((error as { code?: unknown }).code === '42501') return 'no-role-rights';
    throw error;
  }
  try {
    await admin.query(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
    await admin.query(
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role}`,
    );
    const url = new URL(postgresUrl());
    url.username = role;
    url.password = password;
    url.searchParams.set('options', `-c search_path=${schema}`);
    await use(url.toString());
  } finally {
    await admin.query(`DROP OWNED BY ${role}`);
    await admin.query(`DROP ROLE ${role}`);
  }
  return undefined;
}

describe('PostgreSQL: a role that may use the tables but not create in the schema', () => {
  it('opens a schema already migrated by its owner and works in it; a schema too new is SchemaTooNewError', async (context) => {
    const skip = await postgresSkipReason();
    if (skip !== undefined) return context.skip(skip);
    const schema = `lq_user_only_${process.pid}_${Math.floor(Math.random() * 36 ** 6).toString(36)}`;
    const owner = new URL(postgresUrl());
    owner.searchParams.set('options', `-c search_path=${schema}`);
    const admin = new pg.Client({ connectionString: postgresUrl() });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA ${schema}`);
      await (await openEngine(owner.toString())).close();
      const name = queueName('user-only');
      const refused = await withUserOnly(admin, schema, async (url) => {
        const engine = await openEngine(url);
        try {
          const queue = await engine.queue(name);
          await queue.publish(1, { id: 'a' });
          const [delivery] = await queue.reserve(2);
          expect(await queue.ack(3, delivery?.token ?? 0)).toBe(true);
          expect((await queue.stats(4)).acks).toBe(1);
        } finally {
          await engine.close();
        }
        // Storage that takes no writes is still refused at open, as before anything is served.
        const readOnly = new URL(url);
        readOnly.searchParams.set(
          'options',
          `-c search_path=${schema} -c default_transaction_read_only=on`,
        );
        const refusal = openEngine(readOnly.toString());
        await expect(refusal).rejects.toBeInstanceOf(StorageUnavailableError);
        await expect(refusal).rejects.toThrow(/takes no writes/);
        const { rows } = await admin.query(`SELECT MAX(version) AS v FROM ${schema}.leaseq_schema`);
        await admin.query(`INSERT INTO ${schema}.leaseq_schema VALUES ($1)`, [rows[0].v + 1]);
        const failure = openEngine(url);
        await expect(failure).rejects.toBeInstanceOf(SchemaTooNewError);
        await expect(failure).rejects.not.toThrow(new URL(url).password);
      });
      if (refused !== undefined) return context.skip('the tests user may not create roles');
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    }
  });

  it('a migration such a role may not apply: refused naming the migration and what to do, not as privileges to grant back', async (context) => {
    const skip = await postgresSkipReason();
    if (skip !== undefined) return context.skip(skip);
    const schema = `lq_user_upgrade_${process.pid}_${Math.floor(Math.random() * 36 ** 6).toString(36)}`;
    const owner = new URL(postgresUrl());
    owner.searchParams.set('options', `-c search_path=${schema}`);
    const admin = new pg.Client({ connectionString: postgresUrl() });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA ${schema}`);
      await (await openEngine(owner.toString())).close();
      // As a schema written by the release before this one: its newest migration not applied.
      const { rows } = await admin.query(`SELECT MAX(version) AS v FROM ${schema}.leaseq_schema`);
      await admin.query(`DELETE FROM ${schema}.leaseq_schema WHERE version = $1`, [rows[0].v]);
      const refused = await withUserOnly(admin, schema, async (url) => {
        const failure = openEngine(url);
        await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
        await expect(failure).rejects.toThrow(
          new RegExp(`could not migrate its schema to version ${rows[0].v} \\(`),
        );
        await expect(failure).rejects.toThrow(/open it once as a role that may/);
        await expect(failure).rejects.not.toThrow(/grant them back/);
      });
      if (refused !== undefined) return context.skip('the tests user may not create roles');
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    }
  });

  it('a schema not made yet still needs the right to create: refused, typed, naming the target', async (context) => {
    const skip = await postgresSkipReason();
    if (skip !== undefined) return context.skip(skip);
    const schema = `lq_user_new_${process.pid}_${Math.floor(Math.random() * 36 ** 6).toString(36)}`;
    const admin = new pg.Client({ connectionString: postgresUrl() });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA ${schema}`);
      const refused = await withUserOnly(admin, schema, async (url) => {
        const failure = openEngine(url);
        await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
        await expect(failure).rejects.toThrow(/permission denied for schema/);
        await expect(failure).rejects.not.toThrow(new URL(url).password);
      });
      if (refused !== undefined) return context.skip('the tests user may not create roles');
      const tables = await admin.query(
        'SELECT table_name FROM information_schema.tables WHERE table_schema = $1',
        [schema],
      );
      expect(tables.rows).toEqual([]);
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    }
  });
});
