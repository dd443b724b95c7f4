import { afterAll, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import {
  type BatchContext,
  GroupCommitExecutor,
  type Work,
} from '../../src/engine/sql/executor.js';
import type { SqlConnection } from '../../src/engine/sql/sql-connection.js';
import { engineFactories, queueName } from '../conformance/engines.js';
import { gathering } from '../process-failures.js';
import { recordingConnection } from './recording-connection.js';

/**
 * A listener of an engine's wake-ups or cancels that throws is the listener's failure, not the
 * engine's: the calls whose commit told it are answered with their outcomes (they committed),
 * the other listeners are told all the same, the engine goes on, and the error is reported as
 * EventTarget reports a listener's: an uncaught exception, after the rest ran.
 */

/** The answer of `call`, or 'no answer' when none came within 10 s (a call left hanging). */
function answerOf<T>(call: Promise<T>): Promise<T | 'no answer'> {
  let timer: NodeJS.Timeout | undefined;
  const none = new Promise<'no answer'>((resolve) => {
    timer = setTimeout(() => resolve('no answer'), 10_000);
  });
  return Promise.race([call, none]).finally(() => clearTimeout(timer));
}

/** A few turns of the event loop: what was reported as uncaught has been by then. */
async function turns(count = 3): Promise<void> {
  for (let turn = 0; turn < count; turn++) await new Promise((resolve) => setImmediate(resolve));
}

const factories = engineFactories();
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

/** Removals of a test's throwing listeners: they go before it deletes its queue. */
const cleanups: (() => void)[] = [];
const removeThrowingListeners = () => {
  for (const remove of cleanups.splice(0)) remove();
};

describe.each(factories)('a throwing listener on $name', (factory) => {
  it('of wake-ups: the publishes are answered, the other listeners told, the error reported', async () => {
    const engine = await factory.open();
    const name = queueName('wake-throws');
    const failure = new Error('wake listener failed');
    try {
      await gathering(async (seen) => {
        const queue = await engine.queue(name);
        const throwing = engine.onWake(() => {
          throw failure;
        });
        const heard: string[] = [];
        engine.onWake((woken) => heard.push(woken));
        cleanups.push(throwing);
        // Calls of one turn: one batch on the SQL engines, every caller of it answered.
        const answers = await answerOf(
          Promise.all([
            queue.publish(1, { id: 'a' }),
            queue.publish(1, { id: 'b' }),
            queue.publish(1, { id: 'c' }),
          ]),
        );
        expect(answers).toEqual([
          { id: 'a', duplicate: false },
          { id: 'b', duplicate: false },
          { id: 'c', duplicate: false },
        ]);
        await turns();
        expect(heard).toContain(name);
        expect(seen.uncaught.length).toBeGreaterThan(0);
        expect(seen.uncaught.every((error) => error === failure)).toBe(true);
        expect(seen.unhandled).toEqual([]);
        // The engine goes on: what committed is there, and later calls are answered.
        const taken = await answerOf(queue.reserve(2, { max: 5 }));
        expect(taken === 'no answer' ? taken : taken.map((delivery) => delivery.id)).toEqual([
          'a',
          'b',
          'c',
        ]);
        expect(await answerOf(queue.publish(3, { id: 'd' }))).toEqual({
          id: 'd',
          duplicate: false,
        });
        await turns();
        expect(seen.unhandled).toEqual([]);
      });
    } finally {
      removeThrowingListeners();
      await engine.deleteQueue(name).catch(() => undefined);
      await engine.close();
    }
  });

  it('of cancels: the cancel is answered, the other listeners told, the error reported', async () => {
    const engine = await factory.open();
    const name = queueName('cancel-throws');
    const failure = new Error('cancel listener failed');
    try {
      await gathering(async (seen) => {
        const queue = await engine.queue(name, { visibility: 60_000 });
        await queue.publish(1, { id: 'a' });
        const [delivery] = await queue.reserve(1);
        const throwing = engine.onCancel?.(() => {
          throw failure;
        });
        if (throwing !== undefined) cleanups.push(throwing);
        const heard: [string, number][] = [];
        engine.onCancel?.((queueOf, token) => heard.push([queueOf, token]));
        expect(await answerOf(queue.cancel(2, 'a'))).toBe(true);
        await turns();
        expect(heard).toEqual([[name, delivery?.token]]);
        expect(seen.uncaught).toEqual([failure]);
        expect(seen.unhandled).toEqual([]);
        expect(await answerOf(queue.publish(3, { id: 'b' }))).toEqual({
          id: 'b',
          duplicate: false,
        });
      });
    } finally {
      removeThrowingListeners();
      await engine.deleteQueue(name).catch(() => undefined);
      await engine.close();
    }
  });

  it('of wake-ups registered before a broker: its waiting receive still gets the job', async () => {
    const engine = await factory.open();
    const name = queueName('wake-broker');
    const failure = new Error('wake listener failed');
    cleanups.push(
      engine.onWake(() => {
        throw failure;
      }),
    );
    // A clock that never moves: only a wake-up, or a hand-over, ends the wait.
    const broker = new EngineBroker(engine, { clock: new ManualClock(1_000) });
    try {
      await gathering(async (seen) => {
        const queue = await broker.queue(name);
        const stop = new AbortController();
        const receiving = queue.receive({ wait: 60_000, signal: stop.signal });
        await turns(10);
        const published = await answerOf(queue.publish({ id: 'a' }));
        expect(published).toEqual({ id: 'a', duplicate: false });
        const received = await answerOf(receiving);
        stop.abort();
        expect(received === 'no answer' ? received : received.map((job) => job.id)).toEqual(['a']);
        await turns();
        expect(seen.uncaught.length).toBeGreaterThan(0);
        expect(seen.uncaught.every((error) => error === failure)).toBe(true);
        expect(seen.unhandled).toEqual([]);
      });
    } finally {
      removeThrowingListeners();
      await engine.deleteQueue(name).catch(() => undefined);
      await broker.close();
    }
  });

  it('of a queue watchCancels through a broker: the cancel is answered, other watchers told', async () => {
    const engine = await factory.open();
    const name = queueName('watch-cancels');
    const failure = new Error('cancel watcher failed');
    const broker = new EngineBroker(engine, { clock: new ManualClock(1_000) });
    try {
      await gathering(async (seen) => {
        const queue = await broker.queue(name, { visibility: 60_000 });
        await queue.publish({ id: 'a' });
        const [delivery] = await queue.receive();
        const throwing = queue.watchCancels?.(() => {
          throw failure;
        });
        if (throwing !== undefined) cleanups.push(throwing);
        const heard: number[] = [];
        queue.watchCancels?.((token) => heard.push(token));
        expect(await answerOf(queue.cancel('a'))).toBe(true);
        await turns();
        expect(heard).toEqual([delivery?.token]);
        expect(seen.uncaught).toEqual([failure]);
        expect(seen.unhandled).toEqual([]);
      });
    } finally {
      removeThrowingListeners();
      await engine.deleteQueue(name).catch(() => undefined);
      await broker.close();
    }
  });
});

describe.each(factories.filter((factory) => factory.name !== 'memory'))(
  'a throwing listener on $name, told of another process',
  (factory) => {
    it('of wake-ups: the other listeners hear every commit of the other process', async () => {
      const writer = await factory.open();
      const reader = await factory.open();
      const name = queueName('wake-elsewhere');
      const failure = new Error('wake listener failed');
      try {
        await gathering(async (seen) => {
          const queue = await writer.queue(name);
          cleanups.push(
            reader.onWake(() => {
              throw failure;
            }),
          );
          const heard: string[] = [];
          // Of this queue alone: other tests' commits in a shared database wake it too.
          reader.onWake((woken) => {
            if (woken === name) heard.push(woken);
          });
          // A receiver waits there: SQLite's reader watches for the writer's commits meanwhile,
          // PostgreSQL's hears them over its LISTEN connection.
          const stopWatching = reader.watchWakes?.(name);
          try {
            for (const [index, id] of ['a', 'b'].entries()) {
              await queue.publish(1, { id });
              expect(await soon(() => heard.length > index)).toBe(true);
            }
          } finally {
            stopWatching?.();
          }
          await turns();
          expect(heard.slice(0, 2)).toEqual([name, name]);
          expect(seen.uncaught.length).toBeGreaterThan(0);
          expect(seen.uncaught.every((error) => error === failure)).toBe(true);
          expect(seen.unhandled).toEqual([]);
        });
      } finally {
        removeThrowingListeners();
        await writer.deleteQueue(name).catch(() => undefined);
        await reader.close();
        await writer.close();
      }
    });
  },
);

/** Whether `condition` held within 10 s, looked at every 10 ms. */
async function soon(condition: () => boolean): Promise<boolean> {
  for (let look = 0; look < 1_000 && !condition(); look++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return condition();
}

/** A connection that records the transaction's steps; with `laterSync`, syncs after commits. */
function connection(log: string[], laterSync = false): SqlConnection {
  return {
    ...recordingConnection(log),
    ...(laterSync
      ? {
          laterSync: {
            begin: async () => void log.push('begin'),
            sync: async () => void log.push('sync'),
          },
        }
      : {}),
  };
}

describe.each([
  { commit: 'a commit', laterSync: false },
  { commit: 'a commit synced after it', laterSync: true },
])('hooks of a batch that throw, after $commit', ({ laterSync }) => {
  const executor = (log: string[]) =>
    new GroupCommitExecutor(
      async () => ({ connection: connection(log, laterSync), release: () => {} }),
      (error) => error,
      true,
    );

  /** A call that answers `value` and adds a hook that throws `failure`, then one that logs. */
  const throwingHooks =
    (log: string[], value: string, failure: Error): Work<string> =>
    async (_connection: SqlConnection, batch: BatchContext) => {
      batch.afterVisible(() => {
        throw failure;
      });
      batch.afterVisible(() => log.push(`${value} visible`));
      batch.afterCommit(() => {
        throw failure;
      });
      batch.afterCommit(() => log.push(`${value} committed`));
      return value;
    };

  it('every call of the batch is answered, every other hook runs, each error is reported', async () => {
    const log: string[] = [];
    const run = executor(log);
    const failure = new Error('hook failed');
    await gathering(async (seen) => {
      const answers = await answerOf(
        Promise.all([
          run.submit(throwingHooks(log, 'one', failure)),
          run.submit(throwingHooks(log, 'two', failure), 'lease'),
          run.submit(async () => 'three'),
        ]),
      );
      expect(answers).toEqual(['one', 'two', 'three']);
      await turns();
      expect(log.filter((line) => !['begin', 'commit', 'sync'].includes(line))).toEqual([
        'one visible',
        'two visible',
        'one committed',
        'two committed',
      ]);
      expect(seen.uncaught).toEqual([failure, failure, failure, failure]);
      expect(seen.unhandled).toEqual([]);
      // The executor goes on.
      expect(await answerOf(run.submit(async () => 'four'))).toBe('four');
    });
  });

  it('a rollback hook that throws leaves the batch retried and its calls answered', async () => {
    const log: string[] = [];
    const run = executor(log);
    const hookFailure = new Error('rollback hook failed');
    const workFailure = new Error('statement failed');
    await gathering(async (seen) => {
      const answers = await answerOf(
        Promise.allSettled([
          run.submit(async (_connection, batch) => {
            batch.afterRollback(() => {
              throw hookFailure;
            });
            batch.afterRollback(() => log.push('let go'));
            throw workFailure;
          }),
          run.submit(async () => 'other'),
        ]),
      );
      expect(answers).toEqual([
        { status: 'rejected', reason: workFailure },
        { status: 'fulfilled', value: 'other' },
      ]);
      await turns();
      // Rolled back twice: the batch, then the faulty call alone.
      expect(log.filter((line) => line === 'let go')).toEqual(['let go', 'let go']);
      expect(seen.uncaught).toEqual([hookFailure, hookFailure]);
      expect(seen.unhandled).toEqual([]);
    });
  });
});
