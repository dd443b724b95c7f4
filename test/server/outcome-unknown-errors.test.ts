import { afterEach, describe, expect, it } from 'vitest';
import { openRemote, type RemoteBroker } from '../../src/client/index.js';
import {
  type Broker,
  mayHaveTakenEffect,
  open,
  type Queue,
  StorageUnavailableError,
} from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { FrameClient } from '../stream/frames.js';
import { call, withWrappedQueues } from './helpers.js';

/**
 * A storage error that says its call may or may not have taken effect (the connection broke
 * once its COMMIT went out) keeps saying so across a server: in the message that stands for it
 * in a 503 answer, an operation's outcome or a stream frame, and as `mayHaveTakenEffect` there
 * and on the remote client's error. One that failed before any commit says nothing of the kind,
 * on either side.
 */

const MAYBE =
  'the storage is unavailable while this call was under way: it may or may not have taken effect';

/** As the SQL engines fail a call whose commit was cut, and one that failed before it. */
const failures = {
  maybe: () =>
    new StorageUnavailableError(
      'postgres://db/q cannot be reached: Connection terminated unexpectedly (while this call was under way: it may or may not have taken effect)',
      { mayHaveTakenEffect: true },
    ),
  surelyNot: () =>
    new StorageUnavailableError('postgres://db/q cannot be reached: connect ECONNREFUSED'),
};

interface FailingServer {
  baseUrl: string;
  /** The next calls fail with `failure()`: thrown whole, or as each operation's outcome. */
  fail(failure: (() => Error) | undefined, how?: 'thrown' | 'outcome'): void;
  close(): Promise<void>;
}

let server: FailingServer | undefined;
const clients: RemoteBroker[] = [];
const frameClients: FrameClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const client of frameClients.splice(0)) await client.close();
  await server?.close();
  server = undefined;
});

async function failingServer(): Promise<FailingServer> {
  const real: Broker = await open('memory:');
  let failure: (() => Error) | undefined;
  let how: 'thrown' | 'outcome' = 'thrown';
  const broker = withWrappedQueues(real, (queue: Queue) =>
    Object.assign(Object.create(queue) as Queue, {
      publish: (...args: Parameters<Queue['publish']>) =>
        failure === undefined ? queue.publish(...args) : Promise.reject(failure()),
      execute: (operations: Parameters<Queue['execute']>[0]) => {
        if (failure === undefined) return queue.execute(operations);
        const error = failure();
        if (how === 'thrown') return Promise.reject(error);
        return Promise.resolve(operations.map(() => ({ ok: false as const, error })));
      },
    }),
  );
  const app = await createApp({
    receiptSecret: 'test-secret-of-at-least-32-characters',
    broker,
  });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    baseUrl,
    fail(next, nextHow = 'thrown') {
      failure = next;
      how = nextHow;
    },
    async close() {
      await app.close();
      await real.close();
    },
  };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

describe('a storage error whose call may or may not have taken effect, across a server', () => {
  it('a 503 answer of a route says so, in its message and mayHaveTakenEffect; one that surely failed does not', async () => {
    server = await failingServer();
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    server.fail(failures.maybe);
    const maybe = await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs', { body: {} });
    expect(maybe).toMatchObject({ status: 503 });
    expect(maybe.body).toEqual({
      error: { code: 'STORAGE_UNAVAILABLE', message: MAYBE, mayHaveTakenEffect: true },
    });
    server.fail(failures.surelyNot);
    const surelyNot = await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs', { body: {} });
    expect(surelyNot.body).toEqual({
      error: { code: 'STORAGE_UNAVAILABLE', message: 'the storage is unavailable' },
    });
  });

  it('an outcome of a batch over HTTP says so too', async () => {
    server = await failingServer();
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    server.fail(failures.maybe, 'outcome');
    const answer = await call(server.baseUrl, 'POST', '/v1/queues/jobs/operations', {
      body: { operations: [{ type: 'publish', jobs: [{}] }] },
    });
    expect(answer.body.results).toEqual([
      {
        ok: false,
        error: { code: 'STORAGE_UNAVAILABLE', message: MAYBE, mayHaveTakenEffect: true },
      },
    ]);
  });

  it('a stream frame says so, as an outcome and as an error frame', async () => {
    server = await failingServer();
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    const client = await FrameClient.open(server.baseUrl);
    frameClients.push(client);
    const batch = (id: number) =>
      client.request({
        type: 'batch',
        id,
        queue: 'jobs',
        operations: [{ type: 'publish', jobs: [{}] }],
      });
    server.fail(failures.maybe, 'outcome');
    expect(await batch(1)).toEqual({
      type: 'results',
      id: 1,
      results: [
        {
          ok: false,
          error: { code: 'STORAGE_UNAVAILABLE', message: MAYBE, mayHaveTakenEffect: true },
        },
      ],
    });
    server.fail(failures.maybe, 'thrown');
    expect(await batch(2)).toEqual({
      type: 'error',
      id: 2,
      error: { code: 'STORAGE_UNAVAILABLE', message: MAYBE, mayHaveTakenEffect: true },
    });
  });

  for (const transport of ['http', 'stream'] as const) {
    for (const how of ['thrown', 'outcome'] as const) {
      it(`the remote client over ${transport} (${how}) keeps it, and adds it to no error that surely failed`, async () => {
        server = await failingServer();
        const remote = await openRemote(server.baseUrl, { transport });
        clients.push(remote);
        const queue = await remote.queue('jobs');
        server.fail(failures.maybe, how);
        const maybe = await rejection(queue.publish({ payload: 'no id' }));
        expect(maybe).toBeInstanceOf(StorageUnavailableError);
        expect((maybe as Error).message).toBe(MAYBE);
        expect((maybe as StorageUnavailableError).mayHaveTakenEffect).toBe(true);
        expect(mayHaveTakenEffect(maybe)).toBe(true);
        server.fail(failures.surelyNot, how);
        const surelyNot = await rejection(queue.publish({ payload: 'no id' }));
        expect(surelyNot).toBeInstanceOf(StorageUnavailableError);
        expect((surelyNot as Error).message).toBe('the storage is unavailable');
        expect(mayHaveTakenEffect(surelyNot)).toBe(false);
        expect(Object.keys(surelyNot as object)).not.toContain('mayHaveTakenEffect');
      });
    }
  }
});
