import type { SqlConnection } from '../../src/engine/sql/sql-connection.js';

/**
 * A connection that does what the executor asks of it and nothing else, recording its
 * transaction's steps (begin, commit, rollback) in `log`.
 */
export function recordingConnection(log: string[] = []): SqlConnection {
  return {
    query: async () => [],
    run: async () => 0,
    runEach: async () => {},
    runBeforeCommit: async () => {},
    exec: async () => {},
    begin: async () => void log.push('begin'),
    commit: async () => void log.push('commit'),
    rollback: async () => void log.push('rollback'),
  };
}
