import type Database from 'better-sqlite3';
import type { SqlConnection, SqlValue } from '../sql/sql-connection.js';

/** The one connection of a SQLite file; better-sqlite3 is synchronous, so calls resolve at once. */
export class SqliteConnection implements SqlConnection {
  private readonly statements = new Map<string, Database.Statement>();

  constructor(readonly db: Database.Database) {}

  private prepare(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
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

  async runBeforeCommit(sql: string, params: readonly SqlValue[] = []): Promise<void> {
    this.prepare(sql).run(...params);
  }

  async exec(script: string): Promise<void> {
    this.db.exec(script);
  }

  async begin(): Promise<void> {
    // IMMEDIATE takes the write lock now, so a second process waits instead of failing later.
    this.prepare('BEGIN IMMEDIATE').run();
  }

  async commit(): Promise<void> {
    this.prepare('COMMIT').run();
  }

  async rollback(): Promise<void> {
    if (this.db.inTransaction) this.prepare('ROLLBACK').run();
  }
}
