import type pg from 'pg';
import type { CommitKind, SqlConnection, SqlValue } from '../sql/sql-connection.js';

const placeholders = new Map<string, string>();

/** `?` placeholders become `$1, $2, …` (statements never hold a literal `?`). */
export function toPostgresPlaceholders(sql: string): string {
  let converted = placeholders.get(sql);
  if (converted === undefined) {
    let index = 0;
    converted = sql.replace(/\?/g, () => `$${++index}`);
    placeholders.set(sql, converted);
  }
  return converted;
}

/**
 * One pooled client, used by one transaction at a time. Round trips are the cost here, so
 * BEGIN travels with the transaction's first statement and statements whose result nobody
 * reads travel with the COMMIT (as one simple-protocol message, values inlined as literals).
 */
export class PostgresConnection implements SqlConnection {
  private beginPending = false;
  /** BEGIN, and the settings of the transaction it begins (see `begin`). */
  private beginScript = 'BEGIN';
  private readonly beforeCommit: string[] = [];

  constructor(readonly client: pg.PoolClient | pg.Client) {}

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
    const result = await this.client.query({
      name,
      text: toPostgresPlaceholders(sql),
      values: params as SqlValue[],
    });
    return result.rows as Row[];
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    return (await this.send(sql, params)).rowCount ?? 0;
  }

  /** A round trip each: callers that write many rows use one set-based statement instead. */
  async runEach(sql: string, paramLists: readonly (readonly SqlValue[])[]): Promise<void> {
    for (const params of paramLists) await this.send(sql, params);
  }

  async runBeforeCommit(sql: string, params: readonly SqlValue[] = []): Promise<void> {
    this.beforeCommit.push(this.inline(sql, params));
  }

  private async send(sql: string, params: readonly SqlValue[]): Promise<pg.QueryResult> {
    if (!this.beginPending) {
      return this.client.query(toPostgresPlaceholders(sql), params as SqlValue[]);
    }
    this.beginPending = false;
    const results = (await this.client.query(
      `${this.beginScript}; ${this.inline(sql, params)}`,
    )) as unknown as pg.QueryResult[];
    return results.at(-1) as pg.QueryResult;
  }

  /** The statement with its `?` replaced by literals (values are our own numbers and text). */
  private inline(sql: string, params: readonly SqlValue[]): string {
    let index = 0;
    return sql.replace(/\?/g, () => {
      const value = params[index++];
      if (value === null || value === undefined) return 'NULL';
      if (typeof value === 'number') {
        if (!Number.isFinite(value)) throw new RangeError(`cannot inline ${value}`);
        return String(value);
      }
      return this.client.escapeLiteral(value);
    });
  }

  async exec(script: string): Promise<void> {
    await this.client.query(this.beginPending ? `${this.beginScript}; ${script}` : script);
    this.beginPending = false;
  }

  /**
   * A `lease` commit need not wait for the WAL flush (R21). Statements with parameters get a
   * plan for any values, not one for each call's: planned for a queue the table's statistics do
   * not know yet (created or filled since the last ANALYZE), PostgreSQL expects a row or so of
   * it and takes its jobs through the primary key (queue, id), filtering every one (a reserve
   * took 3 ms at a backlog of 20,000, against 0.9 through the ready index). Not in a caller's
   * transaction, whose own statements are planned as the database's settings say.
   */
  async begin(kind: CommitKind = 'durable', forCaller = false): Promise<void> {
    this.beginPending = true;
    this.beginScript = [
      'BEGIN',
      ...(kind === 'lease' ? ['SET LOCAL synchronous_commit = off'] : []),
      ...(forCaller ? [] : ['SET LOCAL plan_cache_mode = force_generic_plan']),
    ].join('; ');
    this.beforeCommit.length = 0;
  }

  async commit(): Promise<void> {
    const script = [...this.beforeCommit.splice(0), 'COMMIT'].join('; ');
    await this.client.query(this.beginPending ? `${this.beginScript}; ${script}` : script);
    this.beginPending = false;
  }

  async rollback(): Promise<void> {
    this.beforeCommit.length = 0;
    if (this.beginPending) {
      this.beginPending = false;
      return;
    }
    await this.client.query('ROLLBACK');
  }
}
