import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  realpathSync,
  rmdirSync,
  statSync,
} from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { LeaseqError, StorageLockedError, StorageUnavailableError } from '../../core/index.js';
import type { Engine } from '../engine.js';
import { checkClockMode, checkEngineOptions, type EngineOptions } from '../engine-options.js';
import { failureText } from '../failure-text.js';
import { loadMigrations, migrate } from '../sql/migrate.js';
import type { SqlDialect } from '../sql/sql-connection.js';
import { SqlEngine } from '../sql/sql-engine.js';
import { FileWatch } from './file-watch.js';
import {
  DEFAULT_BUSY_TIMEOUT_MS,
  isBusy,
  LOCK_HOLDER,
  type LockWait,
  whenNotBusy,
} from './lock-wait.js';
import { databaseFile, SqliteConnection } from './sqlite-connection.js';
import { continueAboveHighWater, lowerHighWater, tokenFence } from './token-fence.js';

export const SQLITE_DIALECT: SqlDialect = {
  lockRow: '',
  setBased: false,
  // Without statistics the planner would scan a queue's jobs to match a token list.
  jobsByToken: 'leaseq_jobs INDEXED BY leaseq_jobs_token',
  // The first entry of the queue's range of leaseq_jobs_ready_since (0015), named: without
  // statistics the planner might take the queue's ready jobs by position and read them all.
  oldestReadyOf: (queue) => `SELECT MIN(ready_since) AS since FROM leaseq_jobs
    INDEXED BY leaseq_jobs_ready_since WHERE queue = ${queue} AND state = 'ready'`,
  jsonList: () => '(SELECT value FROM json_each(?))',
  inJsonList: (column) => `${column} IN (SELECT value FROM json_each(?))`,
  jsonRecords: (columns) =>
    `(SELECT ${columns.map(([name]) => `json_extract(value, '$.${name}') AS ${name}`).join(', ')} FROM json_each(?))`,
};

/** The size the WAL file is cut back to once reused, where it grew past it (bytes). */
const WAL_SIZE_LIMIT = 16 * 1024 * 1024;

/**
 * Opens (creating when missing) a SQLite file in WAL mode. `durability: 'fsync'` (default)
 * answers publishes, acks and every other durable change only once the WAL is synced after
 * their commit (as synchronous=FULL would), and what only moves leases at its commit, its
 * tokens fenced by a synced high-water mark (R21); 'os' syncs nothing (survives a process
 * crash, not power loss). `syncOnThreadPool` runs those syncs beside the event loop.
 */
export async function openSqliteEngine(path: string, options: EngineOptions = {}): Promise<Engine> {
  checkEngineOptions(options);
  const durability = options.durability ?? 'fsync';
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  const target = `sqlite:${path}`;
  const lockWait: LockWait = { target, timeoutMs: busyTimeoutMs };
  const walBefore = walBeside(path);
  const { db, made } = openDatabase(path, target);
  // A file leaseq does not make its own (a clash with its tables) is left in the journal mode
  // it had, as if never opened.
  let journalBefore: unknown;
  try {
    // What needs a lock another process may hold waits for it on timers, up to busyTimeoutMs
    // each: the reading of every page (a file still in rollback-journal mode, being written by
    // another process), the switch to WAL (which a new file needs the whole file for), and
    // the transactions of the migrations and of the token marks (BEGIN IMMEDIATE).
    await whenNotBusy(() => checkIntact(db, target), lockWait);
    journalBefore = db.pragma('journal_mode', { simple: true });
    await whenNotBusy(() => db.pragma('journal_mode = WAL'), lockWait);
    // SQLite reuses the WAL from its start once a checkpoint copied all of it, but leaves the
    // file at the largest size it ever reached: after a reader held a snapshot for a while (a
    // backup, a shell left in a transaction) or a large batch, hundreds of MB for as long as the
    // file is open. Past this size it is cut back as it is reused; below it, as the WAL is in
    // steady use (about 4 MiB between checkpoints of 1000 pages), it is never cut.
    db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
    const fsync = durability === 'fsync';
    db.pragma(`synchronous = ${fsync ? 'FULL' : 'NORMAL'}`);
    // A statement that changes many rows inside a transaction (a reserve or ack of hundreds of
    // jobs) keeps a journal to undo itself, which SQLite spills to a new file in the temporary
    // directory past 64 KiB: files made and deleted per batch, and a failed batch where that
    // directory is read-only (a container's). In memory, it is bounded by the batch.
    db.pragma('temp_store = MEMORY');
    const connection = new SqliteConnection(
      db,
      fsync ? 'FULL' : 'NORMAL',
      options.syncOnThreadPool === true,
      lockWait,
    );
    // Only where some commits sync and others do not can a crash lose a token's commit alone.
    const fenced = connection.laterSync !== undefined;
    const dialect: SqlDialect = fenced ? { ...SQLITE_DIALECT, ...tokenFence() } : SQLITE_DIALECT;
    try {
      await migrate(
        connection,
        dialect,
        await loadMigrations(new URL('./migrations/', import.meta.url)),
        target,
        (error) => translateSqliteError(error, target),
      );
    } catch (error) {
      // Only a file that was not in WAL already: one leaseq uses is, and others may have it open.
      if (typeof journalBefore === 'string' && journalBefore !== 'wal') {
        try {
          db.pragma(`journal_mode = ${journalBefore}`);
        } catch {
          // Best effort: the refusal below is what the caller needs.
        }
      }
      throw error;
    }
    // In either mode: a file used with 'fsync' until a power loss may be opened with 'os', and
    // the tokens handed out before the loss must stay fenced off all the same (R21).
    await inTransaction(connection, continueAboveHighWater);
    let busy = false;
    let walEmptied = false;
    /**
     * The path names another file now (a backup put in its place), or none, but the WAL beside
     * it is still this database's, and SQLite leaves it there at a close: an open of the path
     * would read its pages as that file's. Emptied into this database's own file, unlinked, it
     * leaves the file at the path as it was put there. Done as soon as the loss is seen (calls
     * are refused from then on: nothing more is written), not at the close: by then a server
     * may have opened the file put in place, and its commits in that WAL would go with it.
     * Where the WAL is what went (its path names no file), emptied into the database, still at
     * its path, it keeps what was committed since the last checkpoint, which a crash would lose.
     */
    const emptyWal = () => {
      if (walEmptied || busy) return;
      try {
        const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
        walEmptied = result?.busy === 0;
      } catch {
        // Tried again at the next check, and at the close.
      }
    };
    // A database in memory has no file to lose.
    const file = path === ':memory:' ? undefined : watchFiles(db, path, target, emptyWal);
    return new SqlEngine({
      target,
      capabilities: { durable: true, shared: true, transactions: true, crossProcessWakeups: true },
      // Other processes' commits change data_version; read only while receivers wait.
      foreignWriteVersion: () => db.pragma('data_version', { simple: true }) as number,
      dialect,
      followClock: checkClockMode(options.clockMode) === 'follow',
      leaseCommitsFaster: fenced,
      translateError: (error) => translateSqliteError(error, target),
      acquire: async () => {
        // Looked at again (and the WAL emptied, where it should be) only once lost.
        if (file?.lost !== undefined) throw file.check();
        if (busy) throw new Error('sqlite connection used by two transactions at once');
        busy = true;
        return { connection, release: () => (busy = false) };
      },
      shutdown: async () => {
        // Once a file is lost, its check empties the WAL where it should, unless that was done
        // as the loss was seen (best effort, as the rest of a close).
        if (file?.check() === undefined) {
          // Best effort: if it fails, the next open skips ahead (a gap in tokens, never a repeat).
          if (fsync) await inTransaction(connection, lowerHighWater).catch(() => undefined);
        }
        connection.close();
        db.close();
        file?.close();
      },
    });
  } catch (error) {
    closeRefused(db, path, walBefore);
    removeDirectories(made);
    throw translateSqliteError(error, target);
  }
}

/** Whether a `-wal` file is beside the database file at `path` (its symlinks followed). */
function walBeside(path: string): boolean {
  if (path === ':memory:') return false;
  try {
    return existsSync(`${realpathSync(path)}-wal`);
  } catch {
    // No file there yet: nor a WAL of it.
    return false;
  }
}

/**
 * Closes the connection of a refused open. SQLite's close copies the WAL into the database file
 * and deletes it, where no other connection has the file open: a WAL left by a process that did
 * not close the file (killed) would be merged into one the open refused (damaged, of a newer
 * schema, of another program), which is to be left as it was found. A read-only connection
 * open meanwhile keeps the close from doing so, and cannot do it at its own close. A WAL this
 * open made (`walBefore` false) is deleted at the close, as SQLite does.
 */
function closeRefused(db: Database.Database, path: string, walBefore: boolean): void {
  let holder: Database.Database | undefined;
  if (walBefore) {
    try {
      holder = new Database(path, { readonly: true, fileMustExist: true, timeout: 0 });
      // Its first read takes the lock on the file it keeps while open.
      holder.pragma('schema_version');
    } catch {
      // Best effort: the refusal is what the caller needs.
    }
  }
  db.close();
  holder?.close();
}

/**
 * Watches the database file and the two SQLite keeps open beside it while in WAL mode, named
 * after the file it opened (see databaseFile). Once the database or its WAL is gone, `emptyWal`
 * copies the WAL into the database file; not once only the `-shm` is: another process may have
 * made a new one and written into the WAL since, which that copy, going by this process's index,
 * would cut off. The WAL, still at its path, keeps everything then.
 */
function watchFiles(
  db: Database.Database,
  path: string,
  target: string,
  emptyWal: () => void,
): FileWatch {
  const file = databaseFile(db);
  return new FileWatch(
    target,
    {
      path,
      gone: (absolute) =>
        `the database file ${absolute} was deleted or replaced while open; nothing written from now on would be kept, so nothing more is taken: restart on the file that should be there`,
      lost: emptyWal,
    },
    [
      {
        path: `${file}-wal`,
        gone: (absolute) =>
          `its write-ahead log ${absolute} was deleted or replaced while open; what was committed is copied into the database file, but nothing written from now on would survive a crash, so nothing more is taken: restart`,
        lost: emptyWal,
      },
      {
        path: `${file}-shm`,
        gone: (absolute) =>
          `its shared-memory index ${absolute} was deleted or replaced while open; a process opening the file from now on would write without seeing this one's writes, so nothing more is taken: restart every process that has the file open`,
      },
    ],
  );
}

/** Runs `work` in a durable transaction of its own. */
async function inTransaction(
  connection: SqliteConnection,
  work: (connection: SqliteConnection) => Promise<void>,
): Promise<void> {
  await connection.begin('durable');
  try {
    await work(connection);
    await connection.commit();
  } catch (error) {
    await connection.rollback().catch(() => undefined);
    throw error;
  }
}

/**
 * Refuses a damaged file before anything reads or writes it: a queue served from damaged
 * pages could lose jobs or hand out tokens again without a word. quick_check reads every page
 * once per open (about 0.5 s for a 447 MB file in the OS cache here).
 */
function checkIntact(db: Database.Database, target: string): void {
  let problems: string[];
  try {
    const rows = db.pragma('quick_check(5)') as { quick_check: string }[];
    problems = rows.map((row) => row.quick_check).filter((text) => text !== 'ok');
  } catch (error) {
    const code = (error as { code?: string }).code ?? '';
    if (code !== 'SQLITE_CORRUPT' && code !== 'SQLITE_NOTADB') throw error;
    problems = [(error as Error).message];
  }
  if (problems.length > 0) {
    throw new StorageUnavailableError(
      `${target} is damaged (${problems.join('; ').replace(/\s+/g, ' ')}); nothing was read or written: restore it from a backup`,
    );
  }
}

/**
 * Opens the file with SQLite's busy timeout at 0: a statement another process's lock refuses
 * fails at once, rather than waiting inside SQLite and blocking the event loop, and is tried
 * again on timers (see retryWhileBusy) for up to `busyTimeoutMs`. `made` lists the directories
 * this open created, outermost first, for a failed open to remove (see removeDirectories).
 */
function openDatabase(path: string, target: string): { db: Database.Database; made: string[] } {
  const made: string[] = [];
  try {
    if (path !== ':memory:') makeDirectories(dirname(resolve(path)), target, made);
    return { db: new Database(path, { timeout: 0 }), made };
  } catch (error) {
    removeDirectories(made);
    throw translateSqliteError(error, target);
  }
}

/**
 * Creates the missing directories of `directory`, outermost first, one `mkdir` each, adding
 * each it made to `made`: Node's recursive mkdir spins forever where a parent refuses new
 * entries without saying so (under /proc), which no signal can interrupt.
 */
function makeDirectories(directory: string, target: string, made: string[]): void {
  const missing: string[] = [];
  let at = directory;
  for (; !existsSync(at) && dirname(at) !== at; at = dirname(at)) missing.unshift(at);
  if (existsSync(at) && !statSync(at).isDirectory()) {
    throw new StorageUnavailableError(`${target} cannot be used: ${at} is not a directory`);
  }
  for (const each of missing) {
    try {
      mkdirSync(each);
      made.push(each);
    } catch (error) {
      const code = (error as { code?: string }).code ?? '';
      // Made meanwhile by another process: its directory, not this open's to remove.
      if (code === 'EEXIST' && existsSync(each)) continue;
      throw new StorageUnavailableError(
        `${target} cannot be used: its directory ${each} cannot be created (${code || (error as Error).message})`,
        { cause: error },
      );
    }
  }
}

/**
 * After a failed open, removes the directories it made (`made`, outermost first), deepest
 * first and each only while empty: a mistyped path leaves no new directories behind, and one
 * that holds something (a file SQLite made before the failure, another process's database)
 * stays with the directories above it. What existed before the open is never touched.
 */
function removeDirectories(made: readonly string[]): void {
  for (const each of [...made].reverse()) {
    try {
      rmdirSync(each);
    } catch {
      // Not empty: it stays, and so do those above it (rmdir refuses them too).
    }
  }
}

/** Turns SQLite's failures into typed errors that name the file. */
export function translateSqliteError(error: unknown, target: string): unknown {
  if (error instanceof LeaseqError) return error;
  // Whatever was thrown (a caller's transaction may throw anything: null, a number `code`) is
  // looked at without a throw of its own: an error here would stop the engine's executor.
  const rawCode = (error as { code?: unknown } | null | undefined)?.code;
  const code = typeof rawCode === 'string' ? rawCode : '';
  const message = failureText(error);
  if (isBusy(error) || code.startsWith('SQLITE_LOCKED')) {
    return new StorageLockedError(`${target} is locked by ${LOCK_HOLDER}: ${message}`, {
      cause: error,
    });
  }
  if (code === 'SQLITE_FULL') {
    return new StorageUnavailableError(
      `${target} is full (no space left for the database): ${message}`,
      { cause: error },
    );
  }
  if (
    code.startsWith('SQLITE_CANTOPEN') ||
    code === 'SQLITE_NOTADB' ||
    code === 'SQLITE_CORRUPT' ||
    code.startsWith('SQLITE_READONLY') ||
    code.startsWith('SQLITE_IOERR') ||
    code === 'SQLITE_PERM' ||
    code === 'EACCES' ||
    code === 'ENOTDIR' ||
    code === 'EEXIST'
  ) {
    const why = fileCause(code, target);
    return new StorageUnavailableError(`${target} cannot be used: ${message}${why}`, {
      cause: error,
    });
  }
  return error;
}

/**
 * What SQLite's "attempt to write a readonly database" means, said where its code tells: in
 * WAL mode SQLite writes two files beside the database (`-wal`, `-shm`), so a file this process
 * may write is still read-only to it in a directory it may not write, or where those two were
 * left by another user. And which file its "unable to open database file" is about: it does not
 * say whether the database or one of those two (left by another user, unreadable to this one).
 */
function fileCause(code: string, target: string): string {
  if (!target.startsWith('sqlite:') || target === 'sqlite::memory:') return '';
  const file = resolve(target.slice('sqlite:'.length));
  if (code === 'SQLITE_READONLY_DIRECTORY') {
    return ` (its directory ${dirname(file)} is not writable by this process: SQLite makes the database's -wal and -shm files beside it, so the directory must be writable too)`;
  }
  if (code === 'SQLITE_READONLY') {
    return ` (${file}, or its -wal or -shm file beside it, is not writable by this process)`;
  }
  if (code.startsWith('SQLITE_CANTOPEN')) {
    const found = unopenable(file);
    return found.length > 0 ? ` (${found.join('; ')})` : '';
  }
  return '';
}

/**
 * Why the database `file`, or the `-wal` or `-shm` file beside it (beside the file a symlink
 * points to), cannot be opened, as far as can be told: a directory, or a file this process may
 * not read (one it may not write SQLite opens read-only).
 */
function unopenable(file: string): string[] {
  let real = file;
  try {
    real = realpathSync(file);
  } catch {
    // Not there (or not to be looked at): the files beside are named after the path.
  }
  const found: string[] = [];
  for (const each of [file, `${real}-wal`, `${real}-shm`]) {
    try {
      const stats = statSync(each, { throwIfNoEntry: false });
      if (stats?.isDirectory()) {
        found.push(`${each} is a directory`);
      } else if (stats !== undefined) {
        accessSync(each, constants.R_OK);
      }
    } catch {
      found.push(`${each} is not readable by this process`);
    }
  }
  return found;
}
