import { describe, expect, it } from 'vitest';
import {
  type BatchContext,
  GroupCommitExecutor,
  type Merge,
} from '../../src/engine/sql/executor.js';
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

  it('up to four groups of one tick run as statements, in order, without a transaction', async () => {
    const log: string[] = [];
    const run = executor(log);
    const answers = await Promise.all([
      run.submitMerged(merged(log, 'ack', 1)),
      run.submitMerged(merged(log, 'ack', 2)),
      run.submitMerged(merged(log, 'reserve', 3)),
      run.submitMerged(merged(log, 'ack', 4)),
      run.submitMerged(merged(log, 'reserve', 5)),
      run.submitMerged(merged(log, 'reserve', 6)),
    ]);
    expect(answers).toEqual([1, 2, 3, 4, 5, 6]);
    expect(log).toEqual([
      'direct ack 1,2',
      'direct reserve 3',
      'direct ack 4',
      'direct reserve 5,6',
    ]);
  });

  it('five groups of one tick run in one transaction', async () => {
    const log: string[] = [];
    const run = executor(log);
    const answers = await Promise.all([
      run.submitMerged(merged(log, 'ack', 1)),
      run.submitMerged(merged(log, 'reserve', 2)),
      run.submitMerged(merged(log, 'ack', 3)),
      run.submitMerged(merged(log, 'reserve', 4)),
      run.submitMerged(merged(log, 'ack', 5)),
    ]);
    expect(answers).toEqual([1, 2, 3, 4, 5]);
    expect(log).toEqual([
      'begin',
      'run ack 1',
      'run reserve 2',
      'run ack 3',
      'run reserve 4',
      'run ack 5',
      'commit',
    ]);
  });
});

describe('R32 group commit: answers before a later sync', () => {
  /** A connection that syncs after commit, each sync held until the test lets it go. */
  function laterSyncConnection(log: string[], syncs: (() => void)[], failure?: Error) {
    return {
      ...recordingConnection(log),
      laterSync: {
        begin: async () => void log.push('begin, synced later'),
        sync: () => {
          log.push('sync');
          return new Promise<void>((resolve, reject) => {
            syncs.push(() => (failure === undefined ? resolve() : reject(failure)));
          });
        },
      },
    } satisfies SqlConnection;
  }

  const executor = (connection: SqlConnection, syncLater: boolean) =>
    new GroupCommitExecutor(
      async () => ({ connection, release: () => {} }),
      (error) => error,
      true,
      () => syncLater,
    );

  /** A durable call that hands something to a waiting receiver (`afterVisible`). */
  const handingOver = (log: string[], hold = false) => ({
    call: async (_connection: SqlConnection, batch: BatchContext) => {
      if (hold) batch.holdAnswersForSync();
      batch.afterVisible(() => log.push('receiver answered'));
      return 'published';
    },
  });

  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

  it('a receiver is answered once the batch commits, its caller once the sync ended', async () => {
    const log: string[] = [];
    const syncs: (() => void)[] = [];
    const run = executor(laterSyncConnection(log, syncs), true);
    const published = run.submit(handingOver(log).call).then((value) => {
      log.push(value);
    });
    await settle();
    await settle();
    expect(log).toEqual(['begin, synced later', 'commit', 'receiver answered', 'sync']);
    expect(syncs).toHaveLength(1);
    syncs[0]?.();
    await published;
    expect(log.at(-1)).toBe('published');
  });

  it('nothing is answered before the sync where the batch holds its answers (a raised mark)', async () => {
    const log: string[] = [];
    const syncs: (() => void)[] = [];
    const run = executor(laterSyncConnection(log, syncs), true);
    const published = run.submit(handingOver(log, true).call);
    await settle();
    await settle();
    expect(log).toEqual(['begin, synced later', 'commit', 'sync']);
    syncs[0]?.();
    expect(await published).toBe('published');
    expect(log).toEqual(['begin, synced later', 'commit', 'sync', 'receiver answered']);
  });

  it('with no receiver waiting, a durable batch commits as before', async () => {
    const log: string[] = [];
    const run = executor(laterSyncConnection(log, []), false);
    expect(await run.submit(handingOver(log).call)).toBe('published');
    expect(log).toEqual(['begin', 'commit', 'receiver answered']);
  });

  it('a lease batch never waits for a later sync', async () => {
    const log: string[] = [];
    const run = executor(laterSyncConnection(log, []), true);
    expect(await run.submit(async () => 'reserved', 'lease')).toBe('reserved');
    expect(log).toEqual(['begin', 'commit']);
  });

  it('a failed sync fails its batch and every call after it: nothing builds on what may be lost', async () => {
    const log: string[] = [];
    const syncs: (() => void)[] = [];
    const failure = new Error('EIO: the disk is gone');
    const run = executor(laterSyncConnection(log, syncs, failure), true);
    const published = run.submit(handingOver(log).call);
    await settle();
    await settle();
    const queued = run.submit(async () => 'after');
    syncs[0]?.();
    await expect(published).rejects.toBe(failure);
    await expect(queued).rejects.toBe(failure);
    await expect(run.submit(async () => 'later')).rejects.toBe(failure);
    expect(log.filter((entry) => entry === 'commit')).toHaveLength(1);
  });
});
