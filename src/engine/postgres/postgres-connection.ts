import type pg from 'pg';
import { ConflictError } from '../../core/index.js';
import {
  type CommitKind,
  markNeverSent,
  type SqlConnection,
  type SqlValue,
} from '../sql/sql-connection.js';
import { type ScannedStatement, scanPlaceholders } from './placeholders.js';

/** Statements scanned, by text: the engine's are few and hot; callers' may be many, so capped. */
const scanned = new Map<string, ScannedStatement>();
const SCANNED_MAX = 2000;

function scan(sql: string): ScannedStatement {
  let statement = scanned.get(sql);
  if (statement === undefined) {
    if (scanned.size >= SCANNED_MAX) scanned.clear();
    statement = scanPlaceholders(sql);
    scanned.set(sql, statement);
  }
  return statement;
}

/** `?` placeholders become `$1, $2, …`; a `?` in a string, quoted identifier or comment stays. */
export function toPostgresPlaceholders(sql: string): string {
  return scan(sql).numbered;
}

/** A statement kept for the commit with its values, where it could not be inlined. */
interface BoundStatement {
  readonly sql: string;
  readonly params: readonly SqlValue[];
}

/**
 * One pooled client, used by one transaction at a time. Round trips are the cost here, so
 * BEGIN travels with the transaction's first statement and statements whose result nobody
 * reads travel with the COMMIT (as one simple-protocol message, values inlined as literals).
 * A value is inlined only where the scanner proves the literal lands where its placeholder
 * stood, outside any string or comment; otherwise the statement is sent with bound values.
 */
export class PostgresConnection implements SqlConnection {
  private beginPending = false;
  /** BEGIN, and the settings of the transaction it begins (see `begin`). */
  private beginScript = 'BEGIN';
  /** Inlined, or kept with its values where it could not be. */
  private readonly beforeCommit: (string | BoundStatement)[] = [];
  /** The transaction's latest failed statement's error: why a COMMIT may be answered ROLLBACK. */
  private failed: unknown;
  /**
   * The failure that showed this connection gone (its backend ended, its socket closed); cleared
   * when the server answers a later query, which a connection gone could not.
   */
  private lost: unknown;

  constructor(
    readonly client: pg.PoolClient | pg.Client,
    /** The database, as messages name it. */
    private readonly target = 'PostgreSQL',
    /** Told of every query of it that fails: the failure may say its connection is gone. */
    private readonly onFailure: (error: unknown) => void = () => undefined,
    /**
     * The isolation level a caller's transaction begins at: the database's default, read when
     * the session began (see SESSION_SETUP). Undefined: the session's default as it is.
     */
    private readonly callerIsolation?: Isolation,
  ) {}

  async query<Row extends object>(sql: string, params: readonly SqlValue[] = []): Promise<Row[]> {
    return (await this.send(sql, params)).rows as Row[];
  }

  /**
   * A query outside any transaction, as a prepared statement of this connection named `name`
   * (parsed and planned once per connection): for the statements of the hot path.
   */
  async queryPrepared<Row extends object>(
    name: string,
    sql: string,
    params: readonly SqlValue[],
  ): Promise<Row[]> {
    try {
      const result = await this.watched(
        this.client.query({
          name,
          text: toPostgresPlaceholders(sql),
          values: params as SqlValue[],
        }),
      );
      return result.rows as Row[];
    } catch (error) {
      throw isRefusedUnsent(error) || refusedByServer(error) ? markNeverSent(error) : error;
    }
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    return (await this.send(sql, params)).rowCount ?? 0;
  }

  /** A round trip each: callers that write many rows use one set-based statement instead. */
  async runEach(sql: string, paramLists: readonly (readonly SqlValue[])[]): Promise<void> {
    for (const params of paramLists) await this.send(sql, params);
  }

  async runBeforeCommit(sql: string, params: readonly SqlValue[] = []): Promise<void> {
    this.beforeCommit.push(this.inline(sql, params) ?? { sql, params: [...params] });
  }

  private async send(sql: string, params: readonly SqlValue[]): Promise<pg.QueryResult> {
    const statement = scan(sql);
    if (this.beginPending) {
      this.beginPending = false;
      // With values, a statement is prepared, which refuses several commands: so must this.
      const inlined =
        params.length > 0 && statement.multiStatement ? undefined : this.inline(sql, params);
      if (inlined !== undefined) {
        return lastResult(await this.request(`${this.beginScript}; ${inlined}`));
      }
      // A round trip more, rather than a literal that might not stand where its `?` did.
      await this.request(this.beginScript);
    }
    return lastResult(await this.request(statement.numbered, params as SqlValue[]));
  }

  /** A query of the transaction; a failure is kept to say why PostgreSQL may roll it back. */
  private async request(
    text: string,
    values?: SqlValue[],
  ): Promise<pg.QueryResult | pg.QueryResult[]> {
    try {
      return await this.watched(this.client.query(text, values));
    } catch (error) {
      // 25P02 only repeats that an earlier statement failed: that one is the reason.
      if (!isAborted(error)) this.failed = error;
      throw error;
    }
  }

  /**
   * The statement with its placeholders replaced by literals, or undefined where that would not
   * mean what binding the values means: a placeholder count that does not match (binding fails
   * on it), a plain string holding a backslash (where it ends depends on the session's
   * standard_conforming_strings), a value that is not plain text, a number or null.
   */
  private inline(sql: string, params: readonly SqlValue[]): string | undefined {
    const statement = scan(sql);
    if (statement.backslashInPlainString || statement.parts.length !== params.length + 1) {
      return undefined;
    }
    let text = statement.parts[0] ?? '';
    for (let index = 0; index < params.length; index++) {
      const literal = this.literal(params[index]);
      if (literal === undefined) return undefined;
      text += literal + (statement.parts[index + 1] ?? '');
    }
    return text;
  }

  /**
   * A value as a literal that cannot join the text around it into something else: spaced, and
   * parenthesized where it starts with `-` (`x-?` must not become the comment `x--1`) or is a
   * string (so no adjacent string literal merges with it).
   */
  private literal(value: unknown): string | undefined {
    if (value === null || value === undefined) return ' NULL ';
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return ` ${this.client.escapeLiteral(String(value))} `;
      return value < 0 ? ` (${value}) ` : ` ${value} `;
    }
    // A NUL would end the simple-protocol message's text there: bound, the server refuses it.
    if (typeof value !== 'string' || value.includes('\0')) return undefined;
    return ` (${this.client.escapeLiteral(value)}) `;
  }

  async exec(script: string): Promise<void> {
    await this.script(script);
  }

  /** A script (several statements in one message); the result of its last statement. */
  private async script(script: string): Promise<pg.QueryResult> {
    const result = await this.request(
      this.beginPending ? `${this.beginScript}; ${script}` : script,
    );
    this.beginPending = false;
    return lastResult(result);
  }

  /**
   * The engine's transactions run at read committed whatever the database's default: its row
   * locks, SKIP LOCKED and counters read then written assume each statement sees what committed
   * before it, where repeatable read or serializable would fail them on every race for a queue
   * row (40001). A caller's transaction begins at the database's default, as its own statements
   * would elsewhere.
   *
   * A `lease` commit need not wait for the WAL flush (R21). Statements with parameters get a
   * plan for any values, not one for each call's: planned for a queue the table's statistics do
   * not know yet (created or filled since the last ANALYZE), PostgreSQL expects a row or so of
   * it and takes its jobs through the primary key (queue, id), filtering every one (a reserve
   * took 3 ms at a backlog of 20,000, against 0.9 through the ready index). Not in a caller's
   * transaction, whose own statements are planned as the database's settings say.
   */
  async begin(kind: CommitKind = 'durable', forCaller = false): Promise<void> {
    this.beginPending = true;
    // A caller's at read committed begins at the session's default, which SESSION_SETUP made that.
    const isolation = forCaller ? this.callerIsolation : 'read committed';
    this.beginScript = [
      isolation === undefined || (forCaller && isolation === 'read committed')
        ? 'BEGIN'
        : `BEGIN ISOLATION LEVEL ${isolation.toUpperCase()}`,
      ...(kind === 'lease' ? ['SET LOCAL synchronous_commit = off'] : []),
      ...(forCaller ? [] : ['SET LOCAL plan_cache_mode = force_generic_plan']),
    ].join('; ');
    this.beforeCommit.length = 0;
    this.failed = undefined;
  }

  /**
   * A transaction in which a statement failed (its error caught by the caller, who went on) is
   * aborted: PostgreSQL refuses the statements after it (25P02), and answers its COMMIT with
   * ROLLBACK rather than an error. Either way nothing of it committed, and the caller is told.
   */
  async commit(): Promise<void> {
    let committed: pg.QueryResult;
    // Until the message with the COMMIT is handed to the client, a failure (a statement kept for
    // the commit, the connection found broken) means the COMMIT never went out.
    let commitSent = false;
    try {
      // Gone under an earlier statement (whose failure the caller caught and went on): the
      // transaction was rolled back with its backend, and a COMMIT now could not reach it.
      if (this.lost !== undefined) throw this.lost;
      const script: string[] = [];
      for (const statement of this.beforeCommit.splice(0)) {
        if (typeof statement === 'string') {
          script.push(statement);
          continue;
        }
        // One that could not be inlined runs bound, in its turn.
        if (script.length > 0) await this.exec(script.splice(0).join('; '));
        await this.send(statement.sql, statement.params);
      }
      script.push('COMMIT');
      commitSent = true;
      committed = await this.script(script.join('; '));
    } catch (error) {
      if (isAborted(error)) throw this.rolledBack();
      throw !commitSent || isRefusedUnsent(error) || refusedByServer(error)
        ? markNeverSent(error)
        : error;
    }
    if (committed.command !== 'COMMIT') throw this.rolledBack();
  }

  private rolledBack(): ConflictError {
    const reason = this.failed === undefined ? '' : ` (${(this.failed as Error).message})`;
    return new ConflictError(
      `${this.target}: the transaction was rolled back, nothing of it was committed: a statement of it failed${reason}, and PostgreSQL runs nothing of a transaction after a failed statement; let that error end the transaction, or roll back to a savepoint`,
      { cause: this.failed },
    );
  }

  async rollback(): Promise<void> {
    this.beforeCommit.length = 0;
    if (this.beginPending) {
      this.beginPending = false;
      return;
    }
    await this.watched(this.client.query('ROLLBACK'));
  }

  /** A query's result; its failure told to `onFailure` first. */
  private async watched<T>(query: Promise<T>): Promise<T> {
    try {
      const result = await query;
      // Answered: the connection is alive after all (the code came at ERROR level, as dblink
      // and postgres_fdw relay a remote backend's end, and the work went on past it).
      this.lost = undefined;
      return result;
    } catch (error) {
      if (endsConnection(error)) this.lost ??= error;
      else if (answeredByServer(error)) this.lost = undefined;
      this.onFailure(error);
      throw error;
    }
  }
}

/** PostgreSQL's transaction isolation levels, as `default_transaction_isolation` spells them. */
export type Isolation = 'read uncommitted' | 'read committed' | 'repeatable read' | 'serializable';

const ISOLATIONS: ReadonlySet<string> = new Set<Isolation>([
  'read uncommitted',
  'read committed',
  'repeatable read',
  'serializable',
]);

/**
 * Run once on each new connection, before its first transaction, as one message: reads the
 * database's default isolation (its own, its role's, or the URL's `options`), for the caller's
 * transactions, then makes read committed the session's default, so that the one-statement
 * reserves and acks, which commit themselves, run at it with no statement more; and runs the
 * after-crash check (migration 0013), at read committed too (SET TRANSACTION, first in the
 * message's transaction: the default set after it applies from the next one).
 */
export const SESSION_SETUP = [
  'SET TRANSACTION ISOLATION LEVEL READ COMMITTED',
  "SELECT current_setting('default_transaction_isolation') AS isolation, pg_backend_pid() AS backend",
  "SELECT set_config('default_transaction_isolation', 'read committed', false), leaseq_continue_after_crash()",
].join('; ');

/** The database's default isolation, from SESSION_SETUP's results (undefined if unknown). */
export function sessionIsolation(result: pg.QueryResult | pg.QueryResult[]): Isolation | undefined {
  const results = Array.isArray(result) ? result : [result];
  const value = (results[1]?.rows[0] as { isolation?: unknown } | undefined)?.isolation;
  return typeof value === 'string' && ISOLATIONS.has(value) ? (value as Isolation) : undefined;
}

/** The server process of the session, from SESSION_SETUP's results (undefined if unknown). */
export function sessionBackend(result: pg.QueryResult | pg.QueryResult[]): number | undefined {
  const results = Array.isArray(result) ? result : [result];
  const value = (results[1]?.rows[0] as { backend?: unknown } | undefined)?.backend;
  return typeof value === 'number' ? value : undefined;
}

/** A script of several statements answers a result for each. */
function lastResult(result: pg.QueryResult | pg.QueryResult[]): pg.QueryResult {
  return (Array.isArray(result) ? result.at(-1) : result) as pg.QueryResult;
}

/**
 * node-postgres refusing a query of a client whose connection already failed or ended: the
 * query was never sent.
 */
export function isRefusedUnsent(error: unknown): boolean {
  return /^Client (has encountered a connection error|was closed) and is not queryable$/.test(
    (error as Error | null)?.message ?? '',
  );
}

/**
 * A failure after which the connection is certainly gone: its backend ended (terminated, the
 * server shutting down or crashed: 57P01–57P03; idle in a transaction for longer than
 * idle_in_transaction_session_timeout: 25P03), its socket closed, or a query refused for that.
 */
function endsConnection(error: unknown): boolean {
  const code = String((error as { code?: unknown } | null)?.code ?? '');
  return (
    /^(57P0[123]|25P03)$/.test(code) ||
    isRefusedUnsent(error) ||
    /^Connection terminated/.test((error as Error | null)?.message ?? '')
  );
}

/** An error the server sent (node-postgres gives those its severity): it was there to answer. */
function answeredByServer(error: unknown): boolean {
  return typeof (error as { severity?: unknown } | null)?.severity === 'string';
}

/**
 * An error the server answered at ERROR level, its session going on: PostgreSQL rolled back the
 * transaction it failed (a COMMIT after it in the same message is not run; a statement that
 * commits by itself commits nothing), so nothing of it was committed. Not a FATAL or PANIC one,
 * which ends the session and may come after the commit (nor one in another language, whose
 * level cannot be read: such a failure stays one whose outcome is unknown).
 */
function refusedByServer(error: unknown): boolean {
  return (error as { severity?: unknown } | null)?.severity === 'ERROR' && !endsConnection(error);
}

/** 25P02: the transaction is aborted, an earlier statement of it having failed. */
export function isAborted(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '25P02';
}
