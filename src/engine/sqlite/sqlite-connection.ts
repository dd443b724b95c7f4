import type Database from 'better-sqlite3';
import type { CommitKind, SqlConnection, SqlValue } from '../sql/sql-connection.js';
import { DEFAULT_BUSY_TIMEOUT_MS, isBusy, type LockWait, retryWhileBusy } from './lock-wait.js';
import { WalSync } from './wal-sync.js';

/** SQLite's `synchronous` levels used here. */
export type SyncLevel = 'FULL' | 'NORMAL';

/**
 * Most prepared statements a connection keeps, by text; past it, they are prepared again as they
 * come. The engine's own are about a hundred, and hot; those of callers' transactions
 * (`tx.query`, `tx.run`) may each be new (values written into the text), and each kept one holds
 * about 3 kB of SQLite's memory for as long as the connection lives.
 */
export const STATEMENTS_KEPT = 2000;

/** The one connection of a SQLite file; better-sqlite3 is synchronous, so calls resolve at once. */
export class SqliteConnection implements SqlConnection {
  private readonly statements = new Map<string, Database.Statement>();
  private level: SyncLevel;
  private readonly walSync: WalSync | undefined;
  readonly laterSync: SqlConnection['laterSync'];
  private readonly leaseLevel: SyncLevel;

  /**
   * `durableLevel`: the `synchronous` level of durable commits (NORMAL in the 'os' mode).
   * `syncOnThreadPool`: the later syncs run on libuv's thread pool (see WalSync).
   * `lockWait`: how long a transaction waits for another process's write lock, on timers (the
   * database's own busy timeout should be 0: it would wait blocking the event loop).
   */
  constructor(
    readonly db: Database.Database,
    private readonly durableLevel: SyncLevel = 'FULL',
    syncOnThreadPool = false,
    private readonly lockWait: LockWait = {
      target: `sqlite:${db.name}`,
      timeoutMs: DEFAULT_BUSY_TIMEOUT_MS,
    },
  ) {
    this.level = db.pragma('synchronous', { simple: true }) === 2 ? 'FULL' : 'NORMAL';
    // In WAL mode a commit at NORMAL writes the WAL and syncs nothing; a sync of the WAL file
    // after it makes it what FULL would have. Only where durable commits sync.
    if (durableLevel === 'FULL' && db.pragma('journal_mode', { simple: true }) === 'wal') {
      this.walSync = new WalSync(`${databaseFile(db)}-wal`, syncOnThreadPool);
      this.laterSync = {
        begin: () => this.beginSyncedLater(),
        sync: () => this.syncCommitted(),
      };
    }
    // Without a later sync there is no token fence (see tokenFence): a reservation's commit
    // then syncs too, so that no token is handed out twice across a power loss.
    this.leaseLevel = durableLevel === 'FULL' && this.laterSync === undefined ? 'FULL' : 'NORMAL';
  }

  /** Lets go of the WAL file (before the database closes). */
  close(): void {
    this.walSync?.close();
  }

  private prepare(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      // A statement let go is finalized once collected; one in use (a busy BEGIN waiting to be
      // run again) is held by its user until then.
      if (this.statements.size >= STATEMENTS_KEPT) this.statements.clear();
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  async query<Row extends object>(sql: string, params: readonly SqlValue[] = []): Promise<Row[]> {
    return this.prepare(sql).all(...params) as Row[];
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    return this.prepare(sql).run(...params).changes;
  }

  async runEach(sql: string, paramLists: readonly (readonly SqlValue[])[]): Promise<void> {
    const statement = this.prepare(sql);
    for (const params of paramLists) statement.run(...params);
  }

  async runBeforeCommit(sql: string, params: readonly SqlValue[] = []): Promise<void> {
    this.prepare(sql).run(...params);
  }

  async exec(script: string): Promise<void> {
    this.db.exec(script);
  }

  async begin(kind: CommitKind = 'durable'): Promise<void> {
    const waiting = this.open(kind === 'durable' ? this.durableLevel : this.leaseLevel);
    if (waiting !== undefined) await waiting;
  }

  /** Makes every commit so far durable (`laterSync.sync`): the WAL, synced as FULL would. */
  async syncCommitted(): Promise<void> {
    if (this.walSync === undefined) {
      throw new Error('this connection syncs every durable commit itself: nothing to sync after');
    }
    await this.walSync.sync();
  }

  /** A durable transaction whose commit is synced by `laterSync.sync`, not by SQLite. */
  async beginSyncedLater(): Promise<void> {
    const waiting = this.open('NORMAL');
    if (waiting !== undefined) await waiting;
  }

  /**
   * Begins a transaction; undefined when it began at once, else the wait for another process's
   * write lock (see retryWhileBusy), which fails with StorageLockedError after `busyTimeoutMs`.
   */
  private open(level: SyncLevel): Promise<void> | undefined {
    this.setLevel(level);
    // IMMEDIATE takes the write lock now, so a second process waits instead of failing later.
    // In WAL mode it is the one statement of a transaction that waits for another's lock.
    const begin = this.prepare('BEGIN IMMEDIATE');
    try {
      begin.run();
      return undefined;
    } catch (error) {
      if (!isBusy(error)) throw error;
      return retryWhileBusy(() => void begin.run(), this.lockWait, error);
    }
  }

  /**
   * How the next commit syncs. In WAL mode, FULL syncs the WAL at every commit and NORMAL
   * only at checkpoints (https://www.sqlite.org/pragma.html#pragma_synchronous); a NORMAL
   * commit survives a process crash, not a power loss. The level is read at each commit, so it
   * can change between transactions, but not inside one ("Safety level may not be changed
   * inside a transaction"): set here, before BEGIN. The WAL is appended in commit order and
   * every sync covers all of it, so what survives a power loss is always every commit up to
   * some point, and includes every FULL commit (https://www.sqlite.org/wal.html).
   */
  private setLevel(level: SyncLevel): void {
    if (level === this.level) return;
    this.prepare(`PRAGMA synchronous = ${level}`).run();
    this.level = level;
  }

  async commit(): Promise<void> {
    this.prepare('COMMIT').run();
  }

  async rollback(): Promise<void> {
    if (this.db.inTransaction) this.prepare('ROLLBACK').run();
  }
}

/**
 * The main database's file as SQLite names it: the path opened with its symlinks resolved.
 * SQLite names the WAL after it, so a database opened through a symlink (`link.db` to
 * `real.db`) has its WAL at `real.db-wal`: `link.db-wal` is no file, or another one.
 */
export function databaseFile(db: Database.Database): string {
  const files = db.pragma('database_list') as { name: string; file: string }[];
  return files.find((each) => each.name === 'main')?.file || db.name;
}
