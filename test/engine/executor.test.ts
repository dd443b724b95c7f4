import { describe, expect, it } from 'vitest';
import { mayHaveTakenEffect, StorageUnavailableError } from '../../src/core/index.js';
import {
  type BatchContext,
  GroupCommitExecutor,
  type Merge,
} from '../../src/engine/sql/executor.js';
import type { SqlConnection } from '../../src/engine/sql/sql-connection.js';
import { recordingConnection } from './recording-connection.js';

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

  const executor = (connection: SqlConnection) =>
    new GroupCommitExecutor(
      async () => ({ connection, release: () => {} }),
      (error) => error,
      true,
    );

  /** A durable call that hands something to a waiting receiver (`afterVisible`). */
  const handingOver = (log: string[], hold = false) => ({
    call: async (_connection: SqlConnection, batch: BatchContext) => {
      if (hold) batch.syncBeforeAnswers();
      batch.afterVisible(() => log.push('receiver answered'));
      return 'published';
    },
  });

  /** Turns of the event loop until `done`, at most 100. */
  const until = async (done: () => boolean) => {
    for (let turn = 0; turn < 100 && !done(); turn++) {
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    expect(done()).toBe(true);
  };

  it('a receiver is answered once the batch commits, its caller once the sync ended', async () => {
    const log: string[] = [];
    const syncs: (() => void)[] = [];
    const run = executor(laterSyncConnection(log, syncs));
    const published = run.submit(handingOver(log).call).then((value) => {
      log.push(value);
    });
    await until(() => syncs.length === 1);
    expect(log).toEqual(['begin, synced later', 'commit', 'receiver answered', 'sync']);
    syncs[0]?.();
    await published;
    expect(log.at(-1)).toBe('published');
  });

  it('nothing is answered before the sync where the batch holds its answers (a raised mark)', async () => {
    const log: string[] = [];
    const syncs: (() => void)[] = [];
    const run = executor(laterSyncConnection(log, syncs));
    const published = run.submit(handingOver(log, true).call);
    await until(() => syncs.length === 1);
    expect(log).toEqual(['begin, synced later', 'commit', 'sync']);
    syncs[0]?.();
    expect(await published).toBe('published');
    expect(log).toEqual(['begin, synced later', 'commit', 'sync', 'receiver answered']);
  });

  it('a lease batch that holds its answers waits for a sync after its commit too', async () => {
    const log: string[] = [];
    const syncs: (() => void)[] = [];
    const run = executor(laterSyncConnection(log, syncs));
    let answered = false;
    const reserved = run
      .submit(async (_connection, batch) => {
        batch.syncBeforeAnswers();
        return 'reserved';
      }, 'lease')
      .then((value) => {
        answered = true;
        return value;
      });
    await until(() => syncs.length === 1);
    expect(log).toEqual(['begin', 'commit', 'sync']);
    expect(answered).toBe(false);
    syncs[0]?.();
    expect(await reserved).toBe('reserved');
  });

  it('a lease batch never waits for a later sync', async () => {
    const log: string[] = [];
    const run = executor(laterSyncConnection(log, []));
    expect(await run.submit(async () => 'reserved', 'lease')).toBe('reserved');
    expect(log).toEqual(['begin', 'commit']);
  });

  it('calls set going by the answers of a batch commit before its sync, and one sync serves them all', async () => {
    const log: string[] = [];
    const syncs: (() => void)[] = [];
    // No time limit on the wait for more batches: a stall of the machine over 1 ms would let
    // the sync go first, which is allowed but not what this case looks at.
    const connection = laterSyncConnection(log, syncs);
    const run = new GroupCommitExecutor(
      async () => ({ connection, release: () => {} }),
      (error) => error,
      true,
      1000,
      60_000,
    );
    let second: Promise<string> | undefined;
    // A durable ack and a lease reserve in one batch: the reserve is answered at the commit,
    // and what its caller does next (the next ack) joins the same sync.
    const first = run.submit(async () => 'acked 1');
    const reserve = run
      .submit(async () => 'reserved', 'lease')
      .then((value) => {
        log.push(value);
        second = run.submit(async () => 'acked 2');
      });
    await until(() => syncs.length === 1);
    await reserve;
    expect(log).toEqual([
      'begin, synced later',
      'commit',
      'reserved',
      'begin, synced later',
      'commit',
      'sync',
    ]);
    syncs[0]?.();
    expect(await first).toBe('acked 1');
    expect(await second).toBe('acked 2');
    expect(syncs).toHaveLength(1);
  });

  it('calls that keep coming do not hold a sync back for long', async () => {
    const log: string[] = [];
    const syncs: (() => void)[] = [];
    const run = executor(laterSyncConnection(log, syncs));
    let calls = 0;
    let stopped = false;
    // Each answer sets the next durable call going at once: there is always more to commit.
    const next = (): void => {
      calls += 1;
      if (calls < 100_000 && syncs.length === 0 && !stopped) {
        void run.submit(async () => 'acked');
        void run.submit(async () => 'reserved', 'lease').then(next);
      }
    };
    next();
    await until(() => syncs.length === 1);
    stopped = true;
    expect(calls).toBeLessThan(100_000);
    let drained = false;
    const draining = run.drain().then(() => {
      drained = true;
    });
    await until(() => {
      for (const release of syncs.splice(0)) release();
      return drained;
    });
    await draining;
  });

  it('a failed sync fails its batch and every call after it: nothing builds on what may be lost', async () => {
    const log: string[] = [];
    const syncs: (() => void)[] = [];
    const failure = new Error('EIO: the disk is gone');
    const run = executor(laterSyncConnection(log, syncs, failure));
    const published = run.submit(handingOver(log).call).catch((error: unknown) => error);
    await until(() => syncs.length === 1);
    const queued = run.submit(async () => 'after').catch((error: unknown) => error);
    syncs[0]?.();
    // Committed, perhaps not on disk: it may or may not have taken effect.
    const unsynced = await published;
    expect(unsynced).toBeInstanceOf(StorageUnavailableError);
    expect(unsynced).toMatchObject({ mayHaveTakenEffect: true, cause: failure });
    expect((unsynced as Error).message).toMatch(
      /^EIO: the disk is gone \(after this call's commit: it may or may not have taken effect/,
    );
    // Never run: they took no effect, and say nothing of the kind.
    const later = await run.submit(async () => 'later').catch((error: unknown) => error);
    for (const notRun of [await queued, later]) {
      expect(notRun).toBeInstanceOf(StorageUnavailableError);
      expect(mayHaveTakenEffect(notRun)).toBe(false);
      expect((notRun as Error).message).toMatch(/^EIO: the disk is gone \(.*this call was not run/);
    }
    expect(log.filter((entry) => entry === 'commit')).toHaveLength(1);
  });
});
