import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { QueueHandle } from '../../src/engine/index.js';
import { translateSqliteError } from '../../src/engine/sqlite/sqlite-engine.js';
import {
  openEngine,
  SchemaTooNewError,
  StorageLockedError,
  StorageUnavailableError,
  ValidationError,
} from '../../src/index.js';
import { postgresUrl, queueName } from '../conformance/engines.js';
import { temporaryDirectory } from '../temporary-directory.js';

// What users get wrong about storage gets a typed error that names the target, and no state.
const dir = temporaryDirectory('leaseq-storage-errors-');

describe('SQLite storage errors', () => {
  it('a file that is not a database: StorageUnavailableError naming the file', async () => {
    const path = join(dir, 'not-a-db.db');
    writeFileSync(path, 'this is a text file, not SQLite\n'.repeat(100));
    const failure = openEngine(`sqlite:${path}`);
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(failure).rejects.toThrow(path);
  });

  it('a path that is a directory, or a -wal beside the file that is one: StorageUnavailableError naming it', async () => {
    const path = join(dir, 'a-directory.db');
    mkdirSync(path);
    const failure = openEngine(`sqlite:${path}`);
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(failure).rejects.toThrow(`(${path} is a directory)`);
    const file = join(dir, 'wal-a-directory.db');
    await (await openEngine(`sqlite:${file}`)).close();
    mkdirSync(`${file}-wal`);
    const beside = openEngine(`sqlite:${file}`);
    await expect(beside).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(beside).rejects.toThrow(
      `unable to open database file (${file}-wal is a directory)`,
    );
  });

  // root reads every file, so this case only means something for other users.
  it.skipIf(process.getuid?.() === 0)(
    'a -wal beside the file that this process may not read: StorageUnavailableError naming it',
    async () => {
      const file = join(dir, 'wal-unreadable.db');
      await (await openEngine(`sqlite:${file}`)).close();
      writeFileSync(`${file}-wal`, '');
      chmodSync(`${file}-wal`, 0o000);
      await expect(openEngine(`sqlite:${file}`)).rejects.toThrow(
        `(${file}-wal is not readable by this process)`,
      );
    },
  );

  it('a damaged file (pages overwritten): refused at open, never served', async () => {
    const path = join(dir, 'damaged.db');
    const engine = await openEngine(`sqlite:${path}`);
    const queue = await engine.queue('jobs');
    const payload = { filler: 'z'.repeat(500) };
    for (let batch = 0; batch < 20; batch++) {
      const jobs = Array.from({ length: 50 }, (_, at) => ({ id: `j${batch}-${at}`, payload }));
      await queue.publishBatch(0, jobs);
    }
    await engine.close();
    const bytes = readFileSync(path);
    const middle = Math.floor(bytes.length / 2);
    for (let at = middle; at < middle + 8192; at++) bytes[at] = (at * 7919) & 0xff;
    writeFileSync(path, bytes);
    const failure = openEngine(`sqlite:${path}`);
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(failure).rejects.toThrow(/damaged.*restore it from a backup/);
  });

  it('a damaged file with the -wal of a process that was killed: refused, the file and its -wal left as they were', async () => {
    const path = join(dir, 'damaged-with-wal.db');
    const payload = { filler: 'z'.repeat(500) };
    const first = await openEngine(`sqlite:${path}`);
    const jobs = Array.from({ length: 1000 }, (_, at) => ({ id: `j${at}`, payload }));
    await (await first.queue('jobs')).publishBatch(0, jobs);
    await first.close();
    // What a kill leaves: the file, and a WAL with commits not yet copied into it.
    const killed = join(dir, 'damaged-with-wal-killed.db');
    const engine = await openEngine(`sqlite:${path}`);
    try {
      await (await engine.queue('jobs')).publish(1, { id: 'in-the-wal', payload });
      copyFileSync(path, killed);
      copyFileSync(`${path}-wal`, `${killed}-wal`);
    } finally {
      await engine.close();
    }
    const bytes = readFileSync(killed);
    const middle = Math.floor(bytes.length / 2);
    for (let at = middle; at < middle + 8192; at++) bytes[at] = (at * 7919) & 0xff;
    writeFileSync(killed, bytes);
    const wal = readFileSync(`${killed}-wal`);
    expect(wal.length).toBeGreaterThan(0);
    const failure = openEngine(`sqlite:${killed}`);
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(failure).rejects.toThrow(/damaged.*nothing was read or written/);
    // Not merged into the damaged file at the close, nor deleted.
    expect(readFileSync(killed).equals(bytes)).toBe(true);
    expect(readFileSync(`${killed}-wal`).equals(wal)).toBe(true);
  });

  it('a full disk (SQLITE_FULL): StorageUnavailableError saying so', () => {
    const full = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    const translated = translateSqliteError(full, 'sqlite:/data/x.db');
    expect(translated).toBeInstanceOf(StorageUnavailableError);
    expect((translated as Error).message).toBe(
      'sqlite:/data/x.db is full (no space left for the database): database or disk is full',
    );
  });

  it('a path inside a file (unreadable location): StorageUnavailableError', async () => {
    const file = join(dir, 'plain-file');
    writeFileSync(file, 'x');
    const failure = openEngine(`sqlite:${file}/deeper/inside.db`);
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(failure).rejects.toThrow(`${file} is not a directory`);
  });

  it('missing directories are made; one that cannot be is a StorageUnavailableError at once', async () => {
    const engine = await openEngine(`sqlite:${join(dir, 'made', 'for', 'it', 'x.db')}`);
    await engine.close();
    // A directory /proc refuses: Node's recursive mkdir never returns there (nor yields to a
    // signal); each level is made on its own instead.
    for (const path of ['/proc/leaseq-nope/x.db', '/sys/leaseq-nope/x.db']) {
      const failure = openEngine(`sqlite:${path}`);
      await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(failure).rejects.toThrow(/its directory \/\w+\/leaseq-nope cannot be created/);
    }
  });

  // root ignores file modes, so this case only means something for other users.
  it.skipIf(process.getuid?.() === 0)(
    'a read-only directory: StorageUnavailableError',
    async () => {
      const readOnly = join(dir, 'ro');
      mkdirSync(readOnly);
      chmodSync(readOnly, 0o500);
      try {
        await expect(openEngine(`sqlite:${readOnly}/x.db`)).rejects.toBeInstanceOf(
          StorageUnavailableError,
        );
      } finally {
        chmodSync(readOnly, 0o700);
      }
    },
  );

  it('a file locked by another process: StorageLockedError after busyTimeoutMs', async () => {
    const path = join(dir, 'locked.db');
    const engine = await openEngine(`sqlite:${path}`);
    await engine.queue('jobs');
    await engine.close();
    const holder = new Database(path);
    holder.exec('BEGIN EXCLUSIVE');
    try {
      const reopened = await openEngine(`sqlite:${path}`, { busyTimeoutMs: 50 }).catch((e) => e);
      if (reopened instanceof Error) {
        expect(reopened).toBeInstanceOf(StorageLockedError);
        expect(reopened.message).toContain(path);
      } else {
        // Opening may read under WAL; the first write must then report the lock.
        const queue = reopened.queue('jobs');
        await expect(queue).rejects.toBeInstanceOf(StorageLockedError);
        await reopened.close();
      }
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    // Once released, the file works and kept its queue.
    const engine2 = await openEngine(`sqlite:${path}`);
    expect((await engine2.listQueues()).map((queue) => queue.name)).toEqual(['jobs']);
    await engine2.close();
  });

  it('a schema newer than this code: SchemaTooNewError, and the file is untouched', async () => {
    const path = join(dir, 'newer.db');
    const engine = await openEngine(`sqlite:${path}`);
    await engine.close();
    const raw = new Database(path);
    raw.prepare('INSERT INTO leaseq_schema (version) VALUES (?)').run(9999);
    raw.close();
    const failure = openEngine(`sqlite:${path}`);
    await expect(failure).rejects.toBeInstanceOf(SchemaTooNewError);
    await expect(failure).rejects.toThrow(/schema version 9999/);
    const after = new Database(path);
    expect(after.prepare('SELECT MAX(version) AS v FROM leaseq_schema').get()).toEqual({ v: 9999 });
    after.close();
  });

  it('a migration numbered below the newest applied one (merged later) is still applied once', async () => {
    const path = join(dir, 'gap.db');
    const engine = await openEngine(`sqlite:${path}`);
    await engine.close();
    // As written by a build that had 0006 but not yet 0005.
    const raw = new Database(path);
    raw.exec('DROP TABLE leaseq_secrets');
    raw.prepare('DELETE FROM leaseq_schema WHERE version = 5').run();
    raw.close();
    const reopened = await openEngine(`sqlite:${path}`);
    expect((await reopened.readSecret('receipt')).current).toMatch(/^[0-9a-f]{64}$/);
    await reopened.close();
    const after = new Database(path);
    const versions = after.prepare('SELECT version FROM leaseq_schema ORDER BY version').all();
    after.close();
    expect(versions.map((row) => (row as { version: number }).version)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
    ]);
  });

  it('a file whose leaseq_* name is taken by a table of another program: StorageUnavailableError naming the migration, the file as it was', async () => {
    const path = join(dir, 'clash.db');
    const raw = new Database(path);
    raw.exec("CREATE TABLE leaseq_jobs (x TEXT); INSERT INTO leaseq_jobs VALUES ('theirs')");
    expect(raw.pragma('journal_mode', { simple: true })).toBe('delete');
    raw.close();
    const failure = openEngine(`sqlite:${path}`);
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(failure).rejects.toThrow(
      /cannot be used: could not migrate its schema to version 1 \(0001_init\.sql\): table leaseq_jobs already exists/,
    );
    const after = new Database(path, { readonly: true });
    try {
      expect(after.pragma('journal_mode', { simple: true })).toBe('delete');
      expect(after.prepare('SELECT x FROM leaseq_jobs').all()).toEqual([{ x: 'theirs' }]);
      const tables = after.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all();
      expect(tables).toEqual([{ name: 'leaseq_jobs' }]);
    } finally {
      after.close();
    }
  });

  it('a table leaseq_schema of another program (versions not numbers): StorageUnavailableError, no row written into it', async () => {
    const path = join(dir, 'foreign-schema.db');
    const raw = new Database(path);
    raw.exec(
      "CREATE TABLE leaseq_schema (version TEXT); INSERT INTO leaseq_schema VALUES ('v1.2-user')",
    );
    raw.close();
    const failure = openEngine(`sqlite:${path}`);
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(failure).rejects.toThrow(/not a whole number \("v1\.2-user"\)/);
    const after = new Database(path, { readonly: true });
    try {
      expect(after.prepare('SELECT version FROM leaseq_schema').all()).toEqual([
        { version: 'v1.2-user' },
      ]);
    } finally {
      after.close();
    }
  });

  it('bad options and URLs: ValidationError', async () => {
    await expect(openEngine('sqlite:')).rejects.toBeInstanceOf(ValidationError);
    await expect(
      openEngine(`sqlite:${join(dir, 'o.db')}`, { durability: 'sometimes' as 'os' }),
    ).rejects.toBeInstanceOf(ValidationError);
    await expect(openEngine('mysql://localhost/db')).rejects.toBeInstanceOf(ValidationError);
    // sqlite://x.db would name /x.db, at the root of the file system.
    await expect(openEngine('sqlite://x.db')).rejects.toThrow(/sqlite: and a path/);
    // No shell expands ~ there: SQLite would make a directory named ~ where the process runs.
    await expect(openEngine('sqlite:~/leaseq.db')).rejects.toThrow(/~ is not expanded/);
  });

  it('a database file deleted while open: every call is a StorageUnavailableError within a second', async () => {
    const file = join(dir, 'deleted.db');
    const engine = await openEngine(`sqlite:${file}`);
    try {
      const queue = await engine.queue(queueName('deleted'));
      await queue.publish(1, { id: 'kept' });
      rmSync(file);
      // SQLite writes on into the unlinked file; the engine notices on its next check.
      let error: unknown;
      for (const until = Date.now() + 3000; error === undefined && Date.now() < until; ) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        error = await queue.publish(2, { id: 'lost' }).then(
          () => undefined,
          (caught: unknown) => caught,
        );
      }
      expect(error).toBeInstanceOf(StorageUnavailableError);
      expect(String((error as Error).message)).toContain('was deleted or replaced while open');
      await expect(engine.listQueues()).rejects.toBeInstanceOf(StorageUnavailableError);
    } finally {
      await engine.close();
    }
  });

  /**
   * Publishes to `queue` every 100 ms until one fails, for up to 3 s: that error (undefined if
   * none failed) and the ids of the publishes that returned.
   */
  async function publishUntilRefused(
    queue: QueueHandle,
  ): Promise<{ error: unknown; published: string[] }> {
    const published: string[] = [];
    let error: unknown;
    for (let at = 0, until = Date.now() + 3000; error === undefined && Date.now() < until; at++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const id = `after-${at}`;
      error = await queue.publish(2, { id }).then(
        () => void published.push(id),
        (caught: unknown) => caught,
      );
    }
    return { error, published };
  }

  it('a -wal file deleted while open: every call is refused within a second, and what was committed is copied into the database file', async () => {
    const file = join(dir, 'wal-deleted.db');
    const engine = await openEngine(`sqlite:${file}`);
    let error: unknown;
    let published: string[] = [];
    try {
      const queue = await engine.queue('jobs');
      await queue.publish(1, { id: 'kept' });
      // SQLite writes on into the unlinked WAL: all of it since the last checkpoint is lost at
      // a crash, the publishes that returned before the deletion too.
      rmSync(`${file}-wal`);
      ({ error, published } = await publishUntilRefused(queue));
      expect(error).toBeInstanceOf(StorageUnavailableError);
      expect(String((error as Error).message)).toContain(
        `its write-ahead log ${file}-wal was deleted or replaced while open`,
      );
      // The database file alone, as a crash now would leave it, holds the publish.
      copyFileSync(file, join(dir, 'wal-deleted-copy.db'));
    } finally {
      await engine.close();
    }
    const copy = await openEngine(`sqlite:${join(dir, 'wal-deleted-copy.db')}`);
    try {
      expect((await (await copy.queue('jobs')).inspect()).ready).toEqual(['kept', ...published]);
    } finally {
      await copy.close();
    }
  });

  it('a -shm file deleted while open: every call is refused within a second', async () => {
    const file = join(dir, 'shm-deleted.db');
    const engine = await openEngine(`sqlite:${file}`);
    let error: unknown;
    let published: string[] = [];
    try {
      const queue = await engine.queue('jobs');
      await queue.publish(1, { id: 'kept' });
      // A process opening the file now makes a new index: the two would write the one WAL
      // without seeing each other.
      rmSync(`${file}-shm`);
      ({ error, published } = await publishUntilRefused(queue));
      expect(error).toBeInstanceOf(StorageUnavailableError);
      expect(String((error as Error).message)).toContain(
        `its shared-memory index ${file}-shm was deleted or replaced while open`,
      );
    } finally {
      await engine.close();
    }
    const reopened = await openEngine(`sqlite:${file}`);
    try {
      expect((await (await reopened.queue('jobs')).inspect()).ready).toEqual([
        'kept',
        ...published,
      ]);
    } finally {
      await reopened.close();
    }
  });

  /**
   * Publishes `in-backup` to the queue `restored` of `engine` (open on `file`), backs `file` up
   * into `backup` (VACUUM INTO), publishes `after-backup` (into the WAL beside the file), then
   * puts the backup in the file's place while the engine still has it open.
   */
  async function replaceByBackup(
    engine: Awaited<ReturnType<typeof openEngine>>,
    file: string,
    backup: string,
  ) {
    const queue = await engine.queue('restored');
    await queue.publish(1, { id: 'in-backup' });
    const copier = new Database(file);
    try {
      copier.prepare('VACUUM INTO ?').run(backup);
    } finally {
      copier.close();
    }
    await queue.publish(2, { id: 'after-backup' });
    renameSync(backup, file);
    return queue;
  }

  it('a database file replaced by a backup while open: after the close the backup is read as it was', async () => {
    const file = join(dir, 'replaced.db');
    const backup = join(dir, 'replaced-backup.db');
    const engine = await openEngine(`sqlite:${file}`);
    try {
      await replaceByBackup(engine, file, backup);
    } finally {
      // Closed before the watch of the file looked again.
      await engine.close();
    }
    const restored = await openEngine(`sqlite:${file}`);
    try {
      expect((await (await restored.queue('restored')).inspect()).ready).toEqual(['in-backup']);
    } finally {
      await restored.close();
    }
  });

  it('a database file replaced while open: an engine opened on the file put in place keeps its writes when the first one closes', async () => {
    const file = join(dir, 'replaced-running.db');
    const backup = join(dir, 'replaced-running-backup.db');
    const left = await openEngine(`sqlite:${file}`);
    let leftOpen = true;
    const restored: { engine?: Awaited<ReturnType<typeof openEngine>> } = {};
    try {
      const queue = await replaceByBackup(left, file, backup);
      // The engine left running notices and refuses every call from then on.
      await expect
        .poll(
          () =>
            queue.inspect().then(
              () => 'served',
              (error: unknown) => (error as { code?: string }).code,
            ),
          { timeout: 10_000, interval: 50 },
        )
        .toBe('STORAGE_UNAVAILABLE');
      restored.engine = await openEngine(`sqlite:${file}`);
      const again = await restored.engine.queue('restored');
      expect((await again.inspect()).ready).toEqual(['in-backup']);
      await again.publish(3, { id: 'after-restore' });
      await left.close();
      leftOpen = false;
      expect((await again.inspect()).ready).toEqual(['in-backup', 'after-restore']);
    } finally {
      if (leftOpen) await left.close();
      await restored.engine?.close();
    }
    const reopened = await openEngine(`sqlite:${file}`);
    try {
      expect((await (await reopened.queue('restored')).inspect()).ready).toEqual([
        'in-backup',
        'after-restore',
      ]);
    } finally {
      await reopened.close();
    }
  });

  it('two engines on one file migrate safely and share the queues', async () => {
    const path = join(dir, 'shared.db');
    const [first, second] = await Promise.all([
      openEngine(`sqlite:${path}`),
      openEngine(`sqlite:${path}`),
    ]);
    const queueA = await first.queue('shared');
    await queueA.publish(1, { id: 'one' });
    const queueB = await second.queue('shared');
    expect((await queueB.inspect()).ready).toEqual(['one']);
    await first.close();
    await second.close();
  });
});

/** The tests' database, its connections using `schema` alone. */
function searchPathUrl(schema: string): string {
  const url = new URL(postgresUrl());
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** Runs `use` with a new empty schema of its own (named after `label`), dropped after. */
async function inOwnSchema(
  label: string,
  use: (admin: pg.Client, schema: string) => Promise<void>,
): Promise<void> {
  const schema = `lq_${label}_${queueName('s').replace(/[^a-z0-9]/gi, '_')}`.toLowerCase();
  const admin = new pg.Client({ connectionString: postgresUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
    await use(admin, schema);
  } finally {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

describe('PostgreSQL storage errors', () => {
  it('a database that is down (nothing listens): StorageUnavailableError naming the target', async () => {
    const failure = openEngine('postgres://postgres:secret@127.0.0.1:1/test');
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(failure).rejects.toThrow('postgres://postgres:***@127.0.0.1:1/test');
    await expect(failure).rejects.not.toThrow('secret');
  });

  it('a password given as a parameter of the URL is hidden too', async () => {
    const failure = openEngine(
      'postgres://postgres@127.0.0.1:1/test?password=secret&sslmode=disable',
    );
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(failure).rejects.toThrow(
      'postgres://postgres@127.0.0.1:1/test?password=***&sslmode=disable',
    );
    await expect(failure).rejects.not.toThrow('secret');
  });

  it('a database that does not exist: StorageUnavailableError', async () => {
    const url = new URL(postgresUrl());
    url.pathname = '/leaseq_no_such_database';
    await expect(openEngine(url.toString())).rejects.toBeInstanceOf(StorageUnavailableError);
  });

  it('a connection that dies inside a transaction fails that call, not the process', async () => {
    const engine = await openEngine(postgresUrl());
    try {
      // The backend is terminated while the transaction waits between two statements: the
      // client's error arrives with no query running (as when PostgreSQL restarts).
      const failure = engine.transaction?.(async (tx) => {
        const [row] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        const other = new pg.Client({ connectionString: postgresUrl() });
        await other.connect();
        await other.query('SELECT pg_terminate_backend($1)', [row?.pid]);
        await other.end();
        await new Promise((resolve) => setTimeout(resolve, 300));
        await tx.query('SELECT 1');
      });
      await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
      const queue = await engine.queue(queueName('after-terminate'));
      await expect(queue.publish(1, { id: 'a' })).resolves.toEqual({ id: 'a', duplicate: false });
    } finally {
      await engine.close();
    }
  });

  it('backends terminated as they connect fail calls with StorageUnavailableError, never the process', async () => {
    // Only this test's connections are terminated, by their application name.
    const url = new URL(postgresUrl());
    url.searchParams.set('application_name', 'leaseq_terminated_test');
    const killer = new pg.Client({ connectionString: postgresUrl() });
    await killer.connect();
    let killing = true;
    const kills = (async () => {
      while (killing) {
        await killer.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
           WHERE application_name = 'leaseq_terminated_test'`,
        );
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
    })();
    const failures = new Set<string>();
    let opened = 0;
    try {
      for (const until = Date.now() + 2500; Date.now() < until; ) {
        try {
          const engine = await openEngine(url.toString());
          opened += 1;
          try {
            await (await engine.queue(queueName('terminated'))).publish(1, { id: 'a' });
          } finally {
            await engine.close();
          }
        } catch (error) {
          failures.add(
            error instanceof StorageUnavailableError ? 'STORAGE_UNAVAILABLE' : String(error),
          );
        }
      }
    } finally {
      killing = false;
      await kills;
      await killer.end();
    }
    expect([...failures]).toEqual(failures.size === 0 ? [] : ['STORAGE_UNAVAILABLE']);
    expect(opened + failures.size).toBeGreaterThan(0);
  });

  it('a schema newer than this code: SchemaTooNewError', async () => {
    await inOwnSchema('newer', async (admin, schema) => {
      await admin.query(`CREATE TABLE ${schema}.leaseq_schema (version INTEGER NOT NULL)`);
      await admin.query(`INSERT INTO ${schema}.leaseq_schema VALUES (9999)`);
      await expect(openEngine(searchPathUrl(schema))).rejects.toBeInstanceOf(SchemaTooNewError);
    });
  });

  it('a schema where a leaseq_* name is taken by another program: StorageUnavailableError naming the migration, nothing created', async () => {
    await inOwnSchema('clash', async (admin, schema) => {
      await admin.query(`CREATE TABLE ${schema}.leaseq_jobs (x TEXT)`);
      const failure = openEngine(searchPathUrl(schema));
      await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(failure).rejects.toThrow(
        /could not migrate its schema to version 1 \(0001_init\.sql\): relation "leaseq_jobs" already exists/,
      );
      await expect(failure).rejects.toThrow(/another program's objects of those names/);
      const tables = await admin.query(
        'SELECT table_name FROM information_schema.tables WHERE table_schema = $1',
        [schema],
      );
      expect(tables.rows).toEqual([{ table_name: 'leaseq_jobs' }]);
    });
  });

  it('a search_path naming no schema: StorageUnavailableError with the database message, no guessed cause', async () => {
    const failure = openEngine(searchPathUrl('lq_no_such_schema'));
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(failure).rejects.toThrow(/no schema has been selected to create in/);
    await expect(failure).rejects.not.toThrow(/another program/);
  });
});
