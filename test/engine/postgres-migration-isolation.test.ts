import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openEngine } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { POSTGRES_DIALECT } from '../../src/engine/postgres/postgres-engine.js';
import { loadMigrations, migrate } from '../../src/engine/sql/migrate.js';
import { scratchDatabasesOfFile } from './postgres-scratch.js';

/**
 * Two processes upgrading one database at once wait for each other on the migration lock: the
 * second must then see the versions the first recorded, whatever isolation level the database
 * gives its transactions by default. Under repeatable read or serializable a transaction reads
 * from a snapshot taken at its first query, which is the wait for the lock itself.
 */
const databases = scratchDatabasesOfFile('migration_isolation');

const MIGRATION_LOCK = 744501;

/** Applies the first `count` migrations, as an older version of leaseq did. */
async function migrateAsOlderVersion(url: string, count: number): Promise<void> {
  const migrations = await loadMigrations(
    new URL('../../src/engine/postgres/migrations/', import.meta.url),
  );
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await migrate(
      new PostgresConnection(client),
      POSTGRES_DIALECT,
      migrations.slice(0, count),
      url,
    );
  } finally {
    await client.end();
  }
}

/** Sessions of the database waiting for the migration lock. */
async function waitingForLock(admin: pg.Client, database: string): Promise<number> {
  const { rows } = await admin.query<{ waiting: string }>(
    `SELECT count(*) AS waiting FROM pg_locks l JOIN pg_database d ON d.oid = l.database
     WHERE l.locktype = 'advisory' AND l.objid = $1 AND NOT l.granted AND d.datname = $2`,
    [MIGRATION_LOCK, database],
  );
  return Number(rows[0]?.waiting);
}

describe('PostgreSQL migration race under a stricter default isolation', () => {
  for (const isolation of ['repeatable read', 'serializable']) {
    it(`two engines upgrading a database whose transactions default to ${isolation} both open it, each migration applied once`, async (context) => {
      const skip = databases.skip();
      if (skip !== undefined) context.skip(skip);
      const db = await databases.make();
      await migrateAsOlderVersion(db.url(), 12);
      await db.admin(
        `ALTER DATABASE ${db.name} SET default_transaction_isolation = '${isolation}'`,
      );
      // A third process holds the migration lock until both engines wait for it.
      const holder = new pg.Client({ connectionString: db.url() });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
        const opening = [openEngine(db.url()), openEngine(db.url())].map((engine) =>
          engine.then(
            (opened) => ({ opened }),
            (error: unknown) => ({ error }),
          ),
        );
        for (let tries = 0; (await waitingForLock(holder, db.name)) < 2; tries++) {
          if (tries > 500) throw new Error('the engines never waited for the migration lock');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        await holder.query('ROLLBACK');
        const results = await Promise.all(opening);
        const engines = results.flatMap((result) => ('opened' in result ? [result.opened] : []));
        try {
          expect(
            results.map((result) => ('error' in result ? String(result.error) : 'opened')),
          ).toEqual(['opened', 'opened']);
          const [first, second] = engines;
          if (first === undefined || second === undefined) throw new Error('an engine is missing');
          await (await first.queue('shared')).publish(1, { id: 'one' });
          expect((await (await second.queue('shared')).inspect()).ready).toEqual(['one']);
        } finally {
          for (const engine of engines) await engine.close();
        }
        const { rows } = await holder.query<{ version: number; copies: string }>(
          'SELECT version, count(*) AS copies FROM leaseq_schema GROUP BY version ORDER BY version',
        );
        const migrations = await loadMigrations(
          new URL('../../src/engine/postgres/migrations/', import.meta.url),
        );
        expect(rows.map((row) => [row.version, Number(row.copies)])).toEqual(
          migrations.map((migration) => [migration.version, 1]),
        );
      } finally {
        await holder.end();
      }
    });
  }
});
