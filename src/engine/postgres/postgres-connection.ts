import type pg from 'pg';
import type { SqlConnection, SqlValue } from '../sql/sql-connection.js';

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

/** One pooled client, used by one transaction at a time. */
export class PostgresConnection implements SqlConnection {
  constructor(readonly client: pg.PoolClient | pg.Client) {}

  async query<Row extends object>(sql: string, params: readonly SqlValue[] = []): Promise<Row[]> {
    const result = await this.client.query(toPostgresPlaceholders(sql), params as SqlValue[]);
    return result.rows as Row[];
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    const result = await this.client.query(toPostgresPlaceholders(sql), params as SqlValue[]);
    return result.rowCount ?? 0;
  }

  async exec(script: string): Promise<void> {
    await this.client.query(script);
  }

  async begin(): Promise<void> {
    await this.client.query('BEGIN');
  }

  async commit(): Promise<void> {
    await this.client.query('COMMIT');
  }

  async rollback(): Promise<void> {
    await this.client.query('ROLLBACK');
  }
}
