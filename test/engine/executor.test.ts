import { describe, expect, it } from 'vitest';
import { GroupCommitExecutor, type Merge } from '../../src/engine/sql/executor.js';
import type { SqlConnection } from '../../src/engine/sql/sql-connection.js';

/** A connection that records what the executor asks of it. */
function recordingConnection(log: string[]): SqlConnection {
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

function merged(log: string[], key: string, arg: number): Merge<number, number> {
  return {
    key,
    arg,
    run: async (_connection, _batch, args) => {
      log.push(`run ${key} ${args.join(',')}`);
      return args;
    },
    direct: async (_connection, _batch, args) => {
      log.push(`direct ${key} ${args.join(',')}`);
      return args;
    },
  };
}

describe('group commit: calls with a one-statement form', () => {
  const executor = (log: string[]) =>
    new GroupCommitExecutor(async () => ({
      connection: recordingConnection(log),
      release: () => {},
    }));

  it('two groups of one tick run as two statements, in order, without a transaction', async () => {
    const log: string[] = [];
    const run = executor(log);
    const answers = await Promise.all([
      run.submitMerged(merged(log, 'ack', 1)),
      run.submitMerged(merged(log, 'ack', 2)),
      run.submitMerged(merged(log, 'reserve', 3)),
    ]);
    expect(answers).toEqual([1, 2, 3]);
    expect(log).toEqual(['direct ack 1,2', 'direct reserve 3']);
  });

  it('three groups of one tick run in one transaction', async () => {
    const log: string[] = [];
    const run = executor(log);
    const answers = await Promise.all([
      run.submitMerged(merged(log, 'ack', 1)),
      run.submitMerged(merged(log, 'reserve', 2)),
      run.submitMerged(merged(log, 'ack', 3)),
    ]);
    expect(answers).toEqual([1, 2, 3]);
    expect(log).toEqual(['begin', 'run ack 1', 'run reserve 2', 'run ack 3', 'commit']);
  });
});
