import { afterEach, describe, expect, it, vi } from 'vitest';
import { openRemote, type RemoteBroker, RemoteError } from '../../src/client/index.js';
import { NotFoundError, StorageUnavailableError } from '../../src/index.js';
import { queueName } from '../conformance/engines.js';
import { FrameClient } from '../stream/frames.js';
import { call } from './helpers.js';
import { deadJobs, readyJobs, type SteppedServer, startSteppedServer } from './stepped-failures.js';
import { serverStorages } from './storages.js';

/**
 * R20: the error that ends a redrive, purge or moveJobs after some of its steps on a SQL engine
 * carries `doneCount`, how many jobs those steps took. A server answers it with the error, in an
 * operation's outcome, an HTTP error body and a stream error frame alike, and the remote client's
 * error has it, as the engine's own error has it in-process.
 */

const storages = (await serverStorages()).filter((storage) => storage.name !== 'memory');

const disk = () => new StorageUnavailableError('the disk went away');
const bug = () => new Error('a failure of no known kind');

let server: SteppedServer | undefined;
const clients: RemoteBroker[] = [];
const frameClients: FrameClient[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  for (const client of clients.splice(0)) await client.close();
  for (const client of frameClients.splice(0)) await client.close();
  await server?.close();
  server = undefined;
});

/** Queues `from`, with 2,500 ready jobs, and `to`, empty. */
async function twoQueues(s: SteppedServer) {
  const from = await s.broker.queue(queueName('from'));
  const to = await s.broker.queue(queueName('to'));
  await readyJobs(from, 'j', 2500);
  return { from, to };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

for (const storage of storages) {
  (storage.skipReason === undefined ? describe : describe.skip)(
    `doneCount of a stepped call over a server on ${storage.name}`,
    () => {
      it('R20 an operation of a batch over HTTP answers doneCount in its error', async () => {
        server = await startSteppedServer(storage.url);
        const { from, to } = await twoQueues(server);
        server.failAt(2, disk);
        const answer = await call(server.baseUrl, 'POST', `/v1/queues/${from.name}/operations`, {
          body: { operations: [{ type: 'moveJobs', to: to.name }] },
        });
        expect(answer.status).toBe(200);
        expect(answer.body.results).toEqual([
          {
            ok: false,
            error: {
              code: 'STORAGE_UNAVAILABLE',
              message: 'the storage is unavailable',
              doneCount: 1000,
            },
          },
        ]);
        expect(await to.stats()).toMatchObject({ ready: 1000 });
        expect(await from.stats()).toMatchObject({ ready: 1500 });
      });

      it('R20 an error answer of a route carries doneCount in its body', async () => {
        server = await startSteppedServer(storage.url);
        const queue = await server.broker.queue(queueName('dead'));
        await deadJobs(queue, 'd', 2500);
        server.failAt(3, disk);
        const answer = await call(
          server.baseUrl,
          'POST',
          `/v1/queues/${queue.name}/dead-letters/redrive`,
          { body: {} },
        );
        expect(answer).toMatchObject({
          status: 503,
          body: {
            error: {
              code: 'STORAGE_UNAVAILABLE',
              message: 'the storage is unavailable',
              doneCount: 2000,
            },
          },
        });
        expect(await queue.stats()).toMatchObject({ ready: 2000, dead: 500 });
      });

      it('R20 a failure of no known kind answers INTERNAL with doneCount, the whole batch refused', async () => {
        server = await startSteppedServer(storage.url);
        const { from, to } = await twoQueues(server);
        server.failAt(2, bug);
        const answer = await call(server.baseUrl, 'POST', `/v1/queues/${from.name}/operations`, {
          body: { operations: [{ type: 'moveJobs', to: to.name }] },
        });
        expect(answer).toMatchObject({
          status: 500,
          body: { error: { code: 'INTERNAL', message: 'internal error', doneCount: 1000 } },
        });
        expect(await to.stats()).toMatchObject({ ready: 1000 });
      });

      it('R20 a stream batch answers doneCount in an outcome and in an error frame', async () => {
        server = await startSteppedServer(storage.url);
        const { from, to } = await twoQueues(server);
        const client = await FrameClient.open(server.baseUrl);
        frameClients.push(client);
        server.failAt(2, disk);
        const results = await client.request({
          type: 'batch',
          id: 1,
          queue: from.name,
          operations: [{ type: 'moveJobs', to: to.name }],
        });
        expect(results).toEqual({
          type: 'results',
          id: 1,
          results: [
            {
              ok: false,
              error: {
                code: 'STORAGE_UNAVAILABLE',
                message: 'the storage is unavailable',
                doneCount: 1000,
              },
            },
          ],
        });
        server.failAt(2, bug);
        const refused = await client.request({
          type: 'batch',
          id: 2,
          queue: from.name,
          operations: [{ type: 'moveJobs', to: to.name }],
        });
        expect(refused).toEqual({
          type: 'error',
          id: 2,
          error: { code: 'INTERNAL', message: 'internal error', doneCount: 1000 },
        });
        expect(await to.stats()).toMatchObject({ ready: 2000 });
      });

      for (const transport of ['http', 'stream'] as const) {
        it(`R20 the remote client error carries doneCount, as in-process (${transport})`, async () => {
          server = await startSteppedServer(storage.url);
          const { from, to } = await twoQueues(server);
          const client = await openRemote(server.baseUrl, { transport });
          clients.push(client);
          const remote = client.handle(from.name);

          server.failAt(2, disk);
          const moved = await rejection(remote.moveJobs({ to: to.name }));
          expect(moved).toBeInstanceOf(StorageUnavailableError);
          expect(moved).toMatchObject({ code: 'STORAGE_UNAVAILABLE', doneCount: 1000 });

          server.failAt(2, bug);
          const internal = await rejection(remote.moveJobs({ to: to.name }));
          expect(internal).toBeInstanceOf(RemoteError);
          expect(internal).toMatchObject({ code: 'INTERNAL', doneCount: 1000 });

          const dead = client.handle((await server.broker.queue(queueName('dead'))).name);
          await deadJobs(await server.broker.queue(dead.name), 'd', 1500);
          server.failAt(2, disk);
          expect(await rejection(dead.redrive())).toMatchObject({ doneCount: 1000 });
          server.failAt(1, disk);
          // Refused at its first step: a count of none, nothing changed.
          expect(await rejection(dead.purge())).toMatchObject({ doneCount: 0 });
          expect(await dead.stats()).toMatchObject({ ready: 1000, dead: 500 });

          // Any other error has none.
          const missing = await rejection(client.handle(queueName('missing')).stats());
          expect(missing).toBeInstanceOf(NotFoundError);
          expect(missing).not.toHaveProperty('doneCount');
        });
      }
    },
  );
}
