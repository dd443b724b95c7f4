export type { SqlConnection, SqlDialect, SqlValue } from './sql-connection.js';
export { SqlEngine, type SqlEngineParts } from './sql-engine.js';
