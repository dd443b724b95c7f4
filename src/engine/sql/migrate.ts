import { readdir, readFile } from 'node:fs/promises';
import { LeaseqError, SchemaTooNewError, StorageUnavailableError } from '../../core/index.js';
import type { SqlConnection, SqlDialect } from './sql-connection.js';

interface Migration {
  version: number;
  name: string;
  script: string;
}

/** The migrations of a dialect: files `NNNN_name.sql` in `directory`, in version order. */
export async function loadMigrations(directory: URL): Promise<Migration[]> {
  const files = (await readdir(directory)).filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file));
  const migrations: Migration[] = [];
  for (const file of files.sort()) {
    migrations.push({
      version: Number(file.slice(0, 4)),
      name: file.slice(5, -4),
      script: await readFile(new URL(file, directory), 'utf8'),
    });
  }
  return migrations;
}

/**
 * Brings the schema up to date in one transaction, applying every migration not yet recorded;
 * safe when two processes open the storage at once. Refuses a schema newer than this code knows.
 * `translate` is the engine's typing of its driver's errors; an error it leaves as it is (a
 * table of that name already there in another shape, a function missing) is refused as
 * StorageUnavailableError naming the migration: nothing of the transaction is kept.
 */
export async function migrate(
  connection: SqlConnection,
  dialect: SqlDialect,
  migrations: readonly Migration[],
  target: string,
  translate: (error: unknown) => unknown = (error) => error,
): Promise<number> {
  const supported = migrations.at(-1)?.version ?? 0;
  // CREATE TABLE IF NOT EXISTS asks for the right to create in the schema even where the table
  // is there: it runs only where a read before the transaction found no table, so a role that
  // may use leaseq's tables but not create opens a schema migrated by another. Elsewhere an
  // update that changes nothing takes its place: storage that takes no writes (a read-only file,
  // a standby) is still refused here, at open, as the CREATE refused it.
  const made = await connection.query('SELECT version FROM leaseq_schema').then(
    () => true,
    () => false,
  );
  let step = 'read its schema version';
  // Making or changing leaseq's tables and functions, not only writing their rows.
  let creating = !made;
  await connection.begin();
  try {
    if (dialect.migrationLock !== undefined) await connection.exec(dialect.migrationLock);
    await connection.exec(
      made
        ? 'UPDATE leaseq_schema SET version = version WHERE FALSE'
        : 'CREATE TABLE IF NOT EXISTS leaseq_schema (version INTEGER NOT NULL)',
    );
    const rows = await connection.query<{ version: number | string }>(
      'SELECT version FROM leaseq_schema',
    );
    // Each migration is applied once, by version: one numbered below the newest applied one
    // (written on a branch merged later) is still applied.
    const applied = new Set(rows.map((row) => Number(row.version)));
    for (const version of applied) {
      // Not leaseq's table: writing versions into it would change a table of the user's.
      if (!Number.isSafeInteger(version) || version < 1) {
        throw new StorageUnavailableError(
          `${target} cannot be used: its table leaseq_schema holds a version that is not a whole number (${rows.map((row) => JSON.stringify(row.version)).join(', ')}), so it is not leaseq's schema table; nothing was written`,
        );
      }
    }
    const current = Math.max(0, ...applied);
    if (current > supported) throw new SchemaTooNewError(current, supported, target);
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      step = `migrate its schema to version ${migration.version} (${String(migration.version).padStart(4, '0')}_${migration.name}.sql)`;
      creating = true;
      await connection.exec(migration.script);
      await connection.run('INSERT INTO leaseq_schema (version) VALUES (?)', [migration.version]);
    }
    await connection.commit();
    return supported;
  } catch (error) {
    await connection.rollback().catch(() => undefined);
    // Refused the right to make or change the schema (a role that may only use it): named with
    // the step, since what it lacks is not what the engine's calls need.
    const refused = creating && isPrivilegeRefused(error);
    const typed = refused ? error : translate(error);
    if (typed !== error || error instanceof LeaseqError) throw typed;
    const message = error instanceof Error ? error.message : String(error);
    const hint = isSchemaClash(error)
      ? " Its leaseq_* tables or functions are not as leaseq made them: another program's objects of those names, or a schema written by an unreleased build"
      : refused
        ? " The role it connects as may not create or change leaseq's tables and functions there: open it once as a role that may (the schema's owner), which applies the migrations; a role granted SELECT, INSERT, UPDATE and DELETE on the tables opens it after that"
        : '';
    throw new StorageUnavailableError(
      `${target} cannot be used: could not ${step}: ${message}. Nothing of it was kept (rolled back).${hint}`,
      { cause: error },
    );
  }
}

/**
 * PostgreSQL's codes for an object there already, or not of the shape a statement expects
 * (duplicate or undefined table, column, function, object; a type mismatch).
 */
const CLASH_STATES = new Set([
  '42P07',
  '42701',
  '42710',
  '42723',
  '42P01',
  '42703',
  '42883',
  '42804',
]);

/** PostgreSQL's insufficient_privilege: the role may not do what the statement does. */
function isPrivilegeRefused(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '42501';
}

/** A migration refused because objects of its names are there already, or otherwise. */
function isSchemaClash(error: unknown): boolean {
  const code = String((error as { code?: unknown } | null)?.code ?? '');
  if (CLASH_STATES.has(code)) return true;
  const message = error instanceof Error ? error.message : '';
  return (
    code.startsWith('SQLITE_') &&
    /already exists|no such (table|column|index)|duplicate column|has no column/.test(message)
  );
}
