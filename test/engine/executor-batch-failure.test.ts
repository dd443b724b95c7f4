import { describe, expect, it } from 'vitest';
import { StorageUnavailableError } from '../../src/core/index.js';
import { GroupCommitExecutor, type Work } from '../../src/engine/sql/executor.js';
import type { SqlConnection } from '../../src/engine/sql/sql-connection.js';

/**
 * The running of batches can throw where nothing expects it: a connection's rollback or
 * release, the storage's translation of an error. No call is then left waiting and nothing
 * escapes as an unhandled rejection: the calls under way fail saying they may or may not have
 * taken effect, those queued behind them saying they were not run, and the executor refuses
 * every later call the same way, each error having the failure as its cause.
 */

/** A connection that does what it is asked and nothing else. */
function quietConnection(): SqlConnection {
  return {
    query: async () => [],
    run: async () => 0,
    runEach: async () => {},
    runBeforeCommit: async () => {},
    exec: async () => {},
    begin: async () => {},
    commit: async () => {},
    rollback: async () => {},
  };
}

/**
 * While `body` runs, the process's uncaught exceptions and unhandled rejections are gathered
 * rather than handled by the test runner; its listeners are back in place after.
 */
async function gathering<T>(
  body: (seen: { uncaught: unknown[]; unhandled: unknown[] }) => Promise<T>,
): Promise<T> {
  const seen = { uncaught: [] as unknown[], unhandled: [] as unknown[] };
  const uncaught = process.listeners('uncaughtException');
  const unhandled = process.listeners('unhandledRejection');
  process.removeAllListeners('uncaughtException');
  process.removeAllListeners('unhandledRejection');
  const onUncaught = (error: unknown) => seen.uncaught.push(error);
  const onUnhandled = (reason: unknown) => seen.unhandled.push(reason);
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUnhandled);
  try {
    return await body(seen);
  } finally {
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUnhandled);
    for (const listener of uncaught) process.on('uncaughtException', listener);
    for (const listener of unhandled) process.on('unhandledRejection', listener);
  }
}

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
        connection: quietConnection(),
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
          async () => ({ connection: quietConnection(), release: () => {} }),
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
            ...quietConnection(),
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
          ...quietConnection(),
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
