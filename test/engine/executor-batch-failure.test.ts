import { describe, expect, it } from 'vitest';
import { StorageUnavailableError } from '../../src/core/index.js';
import { GroupCommitExecutor, type Work } from '../../src/engine/sql/executor.js';
import type { SqlConnection } from '../../src/engine/sql/sql-connection.js';
import { gathering } from '../process-failures.js';
import { recordingConnection } from './recording-connection.js';

/**
 * The running of batches can throw where nothing expects it: a connection's rollback or
 * release, the storage's translation of an error. No call is then left waiting and nothing
 * escapes as an unhandled rejection: the calls under way fail saying they may or may not have
 * taken effect, those queued behind them saying they were not run, and the executor refuses
 * every later call the same way, each error having the failure as its cause.
 */

type Answer = { value: unknown } | { error: unknown } | 'no answer';

/** How `call` settled, or 'no answer' when it did not within 5 s (a call left hanging). */
function answerOf(call: Promise<unknown>): Promise<Answer> {
  let timer: NodeJS.Timeout | undefined;
  const none = new Promise<'no answer'>((resolve) => {
    timer = setTimeout(() => resolve('no answer'), 5_000);
  });
  const settled = call.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  return Promise.race([settled, none]).finally(() => clearTimeout(timer));
}

/** A few turns of the event loop: what was reported as uncaught has been by then. */
async function turns(count = 3): Promise<void> {
  for (let turn = 0; turn < count; turn++) await new Promise((resolve) => setImmediate(resolve));
}

/** Checks that `answer` is a StorageUnavailableError caused by `cause`, its message matching `text`. */
function expectStopped(answer: Answer, cause: Error, text: RegExp): void {
  expect(answer).not.toBe('no answer');
  expect(answer).not.toHaveProperty('value');
  const { error } = answer as { error: unknown };
  expect(error).toBeInstanceOf(StorageUnavailableError);
  expect((error as StorageUnavailableError).code).toBe('STORAGE_UNAVAILABLE');
  expect((error as Error).cause).toBe(cause);
  expect((error as Error).message).toContain(cause.message);
  expect((error as Error).message).toMatch(text);
}

const UNDER_WAY = /while this call was under way: it may or may not have taken effect/;
const NOT_RUN = /this call was not run; reopen the engine/;

describe('group commit: a batch whose running throws', () => {
  it('a release that throws: the batch, the calls queued behind it and later calls all fail, none hangs', async () => {
    await gathering(async (seen) => {
      const failure = new Error('release failed');
      const executor = new GroupCommitExecutor(async () => ({
        connection: recordingConnection(),
        release: () => {
          throw failure;
        },
      }));
      let letGo = () => {};
      const gate = new Promise<void>((resolve) => {
        letGo = resolve;
      });
      let started = () => {};
      const running = new Promise<void>((resolve) => {
        started = resolve;
      });
      const held: Work<string> = async () => {
        started();
        await gate;
        return 'held';
      };
      const batch = [executor.submit(held), executor.submit(async () => 'second')];
      await running;
      // Submitted while the batch runs: they wait for the next one.
      const queued = [executor.submit(async () => 'third'), executor.submit(async () => 'fourth')];
      letGo();
      for (const call of batch) expectStopped(await answerOf(call), failure, UNDER_WAY);
      for (const call of queued) expectStopped(await answerOf(call), failure, NOT_RUN);
      expectStopped(await answerOf(executor.submit(async () => 'later')), failure, NOT_RUN);
      expect(await answerOf(executor.drain())).toEqual({ value: undefined });
      await turns();
      expect(seen.unhandled).toEqual([]);
      expect(seen.uncaught).toEqual([]);
    });
  });

  const ways: {
    name: string;
    failure: Error;
    executor: (failure: Error) => GroupCommitExecutor;
    work: Work<string>;
  }[] = [
    {
      name: 'a translation of a failed call that throws',
      failure: new Error('translate failed'),
      executor: (failure) =>
        new GroupCommitExecutor(
          async () => ({ connection: recordingConnection(), release: () => {} }),
          () => {
            throw failure;
          },
        ),
      work: async () => {
        throw new Error('statement failed');
      },
    },
    {
      name: 'a rollback that throws at once',
      failure: new Error('rollback failed'),
      executor: (failure) =>
        new GroupCommitExecutor(async () => ({
          connection: {
            ...recordingConnection(),
            rollback: (): Promise<void> => {
              throw failure;
            },
          },
          release: () => {},
        })),
      work: async () => {
        throw new Error('statement failed');
      },
    },
    {
      name: 'a translation of a failed sync that throws',
      failure: new Error('translate failed'),
      executor: (failure) => {
        const connection: SqlConnection = {
          ...recordingConnection(),
          laterSync: {
            begin: async () => {},
            sync: async () => {
              throw new Error('sync failed');
            },
          },
        };
        return new GroupCommitExecutor(
          async () => ({ connection, release: () => {} }),
          () => {
            throw failure;
          },
        );
      },
      work: async () => 'committed, not synced',
    },
  ];

  it.each(ways)('$name: the call fails, later calls are refused, none hangs', async (way) => {
    await gathering(async (seen) => {
      const executor = way.executor(way.failure);
      expectStopped(await answerOf(executor.submit(way.work)), way.failure, UNDER_WAY);
      expectStopped(await answerOf(executor.submit(async () => 'later')), way.failure, NOT_RUN);
      expect(await answerOf(executor.drain())).toEqual({ value: undefined });
      await turns();
      expect(seen.unhandled).toEqual([]);
      expect(seen.uncaught).toEqual([]);
    });
  });
});

/**
 * Connections handed out by `acquire` and given back by `release`, counted; `end` resolves once
 * every one handed out is back, as a pg pool's end waits for its clients.
 */
function countingPool(connection: SqlConnection) {
  const counts = { acquired: 0, released: 0 };
  let allBack = () => {};
  return {
    counts,
    acquire: async () => {
      counts.acquired += 1;
      return {
        connection,
        release: () => {
          counts.released += 1;
          if (counts.released === counts.acquired) allBack();
        },
      };
    },
    end: () =>
      new Promise<void>((resolve) => {
        if (counts.released === counts.acquired) resolve();
        else allBack = resolve;
      }),
  };
}

describe('group commit: a rollback that fails', () => {
  it('a rollback that throws at once: the connection is released, its rollback hooks run, the pool ends', async () => {
    await gathering(async (seen) => {
      const failure = new Error('rollback failed');
      const pool = countingPool({
        ...recordingConnection(),
        rollback: (): Promise<void> => {
          throw failure;
        },
      });
      const executor = new GroupCommitExecutor(pool.acquire);
      let rolledBack = 0;
      const call = executor.submit(async (_connection, batch) => {
        batch.afterRollback(() => {
          rolledBack += 1;
        });
        throw new Error('statement failed');
      });
      expectStopped(await answerOf(call), failure, UNDER_WAY);
      expectStopped(await answerOf(executor.submit(async () => 'later')), failure, NOT_RUN);
      expect(await answerOf(executor.drain())).toEqual({ value: undefined });
      expect(pool.counts).toEqual({ acquired: 1, released: 1 });
      expect(rolledBack).toBe(1);
      expect(await answerOf(pool.end())).toEqual({ value: undefined });
      await turns();
      expect(seen.unhandled).toEqual([]);
      expect(seen.uncaught).toEqual([]);
    });
  });

  it('a rollback that rejects: the connection is released, the call fails with its own error and later calls run', async () => {
    await gathering(async (seen) => {
      const pool = countingPool({
        ...recordingConnection(),
        rollback: async () => {
          throw new Error('rollback failed');
        },
      });
      const executor = new GroupCommitExecutor(pool.acquire);
      const statement = new Error('statement failed');
      expect(
        await answerOf(
          executor.submit(async () => {
            throw statement;
          }),
        ),
      ).toEqual({ error: statement });
      expect(await answerOf(executor.submit(async () => 'later'))).toEqual({ value: 'later' });
      expect(await answerOf(executor.drain())).toEqual({ value: undefined });
      expect(pool.counts).toEqual({ acquired: 2, released: 2 });
      expect(await answerOf(pool.end())).toEqual({ value: undefined });
      await turns();
      expect(seen.unhandled).toEqual([]);
      expect(seen.uncaught).toEqual([]);
    });
  });
});

describe('group commit: a failure that stops the running, told to calls that never ran', () => {
  it('a batch split after a rollback: the call run alone may have taken effect, the calls after it were not run', async () => {
    await gathering(async (seen) => {
      const failure = new Error('translate failed');
      const executor = new GroupCommitExecutor(
        async () => ({ connection: recordingConnection(), release: () => {} }),
        () => {
          throw failure;
        },
      );
      const runs = { first: 0, faulty: 0, after: 0 };
      // One batch: the faulty call rolls it back, then each runs alone; the faulty one fails
      // alone and the translation of its failure throws.
      const first = executor.submit(async () => {
        runs.first += 1;
        return 'first';
      });
      const faulty = executor.submit(async () => {
        runs.faulty += 1;
        throw new Error('statement failed');
      });
      const after = [1, 2].map((n) =>
        executor.submit(async () => {
          runs.after += 1;
          return `after ${n}`;
        }),
      );
      expect(await answerOf(first)).toEqual({ value: 'first' });
      expectStopped(await answerOf(faulty), failure, UNDER_WAY);
      for (const call of after) expectStopped(await answerOf(call), failure, NOT_RUN);
      // The batch stopped at the faulty call and rolled back; only the first and the faulty
      // one ran again alone.
      expect(runs).toEqual({ first: 2, faulty: 2, after: 0 });
      expectStopped(await answerOf(executor.submit(async () => 'later')), failure, NOT_RUN);
      expect(await answerOf(executor.drain())).toEqual({ value: undefined });
      await turns();
      expect(seen.unhandled).toEqual([]);
      expect(seen.uncaught).toEqual([]);
    });
  });

  it('a failure to get a connection whose translation throws: every call of the batch was not run', async () => {
    await gathering(async (seen) => {
      const failure = new Error('translate failed');
      let acquired = 0;
      const executor = new GroupCommitExecutor(
        async () => {
          acquired += 1;
          throw new Error('no connection');
        },
        () => {
          throw failure;
        },
      );
      let ran = 0;
      const calls = ['one', 'two'].map((name) =>
        executor.submit(async () => {
          ran += 1;
          return name;
        }),
      );
      for (const call of calls) expectStopped(await answerOf(call), failure, NOT_RUN);
      expect(acquired).toBe(1);
      expect(ran).toBe(0);
      expectStopped(await answerOf(executor.submit(async () => 'later')), failure, NOT_RUN);
      expect(await answerOf(executor.drain())).toEqual({ value: undefined });
      await turns();
      expect(seen.unhandled).toEqual([]);
      expect(seen.uncaught).toEqual([]);
    });
  });

  it('a failure to get a connection for a call run alone after a rollback: it and the calls after it were not run', async () => {
    await gathering(async (seen) => {
      const failure = new Error('translate failed');
      let acquired = 0;
      const executor = new GroupCommitExecutor(
        async () => {
          acquired += 1;
          // The batch, then its first call alone; the second call alone gets none.
          if (acquired > 2) throw new Error('no connection');
          return { connection: recordingConnection(), release: () => {} };
        },
        () => {
          throw failure;
        },
      );
      const first = executor.submit(async () => 'first');
      const faulty = executor.submit(async () => {
        throw new Error('statement failed');
      });
      const after = executor.submit(async () => 'after');
      expect(await answerOf(first)).toEqual({ value: 'first' });
      expectStopped(await answerOf(faulty), failure, NOT_RUN);
      expectStopped(await answerOf(after), failure, NOT_RUN);
      expect(acquired).toBe(3);
      expect(await answerOf(executor.drain())).toEqual({ value: undefined });
      await turns();
      expect(seen.unhandled).toEqual([]);
      expect(seen.uncaught).toEqual([]);
    });
  });
});
