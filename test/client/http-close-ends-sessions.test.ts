import { afterEach, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/queue.js';
import { openRemote, type RemoteBroker } from '../../src/client/index.js';
import { type Operation, StorageUnavailableError } from '../../src/core/index.js';
import { createApp } from '../../src/server/index.js';
import { startTestServer, withWrappedQueues } from '../server/helpers.js';
import { unansweringProxy } from '../worker/remote-harness.js';

/**
 * Closing a client over plain HTTP ends the consumer sessions it opened and still holds (R16):
 * their deliveries are ready again at once, as a stream connection's sessions end with it, not
 * at the session's timeout. A server that is gone, silent or refusing does not hold the close.
 */

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A client over plain HTTP whose requests would wait far longer than the test runs. */
async function httpClient(url: string): Promise<RemoteBroker> {
  const client = await openRemote(url, { transport: 'http', timeoutMs: 600_000 });
  cleanups.push(() => client.close({ signal: AbortSignal.abort() }));
  return client;
}

it('closing a client over plain HTTP ends the sessions it left open, their deliveries ready again at once', async () => {
  const server = await startTestServer();
  cleanups.push(() => server.close());
  const inner = await server.broker.queue('jobs', { visibility: 600_000 });
  await inner.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
  const client = await httpClient(server.baseUrl);
  const jobs = await client.queue('jobs');
  const kept = await jobs.openSession({ timeout: 600_000 });
  const received = await jobs.receive({ session: kept, max: 2, wait: 5000 });
  expect(received.map((delivery) => delivery.id)).toEqual(['a', 'b']);
  // One closed here before, one ended by another client: skipped or answered as ended.
  const closedHere = await jobs.openSession({ timeout: 600_000 });
  await jobs.closeSession(closedHere);
  const endedElsewhere = await jobs.openSession({ timeout: 600_000 });
  const other = await httpClient(server.baseUrl);
  await other.handle('jobs').closeSession(endedElsewhere);
  expect(await inner.stats()).toMatchObject({ ready: 1, active: 2, sessions: 1 });

  await client.close();
  expect(await inner.stats()).toMatchObject({ ready: 3, active: 0, sessions: 0 });
  expect((await inner.inspect()).ready).toEqual(['a', 'b', 'c']);
  // As over the stream: a call naming a session the close ended is answered SESSION_CLOSED.
  await expect(jobs.heartbeat(kept)).rejects.toMatchObject({ code: 'SESSION_CLOSED' });
  await expect(jobs.heartbeat(closedHere)).rejects.toMatchObject({ code: 'CLOSED' });
});

it('closing a client over plain HTTP ends the sessions of each of its queues, those of a deleted queue skipped', async () => {
  const server = await startTestServer();
  cleanups.push(() => server.close());
  const client = await httpClient(server.baseUrl);
  const names = ['one', 'two', 'gone'];
  for (const name of names) {
    const queue = await client.queue(name, { visibility: 600_000 });
    await queue.publish({ id: name });
    const session = await queue.openSession({ timeout: 600_000 });
    expect(await queue.receive({ session })).toMatchObject([{ id: name }]);
  }
  await client.deleteQueue('gone');
  await client.close();
  for (const name of ['one', 'two']) {
    const inner = await server.broker.queue(name);
    expect(await inner.stats()).toMatchObject({ ready: 1, active: 0, sessions: 0 });
  }
});

it('the close of a client over plain HTTP whose server is gone resolves, its sessions left to their timeout', async () => {
  const server = await startTestServer();
  cleanups.push(() => server.close());
  const client = await httpClient(server.baseUrl);
  const jobs = await client.queue('jobs', { visibility: 600_000 });
  await jobs.publish({ id: 'a' });
  const session = await jobs.openSession({ timeout: 600_000 });
  expect(await jobs.receive({ session })).toMatchObject([{ id: 'a' }]);
  await server.close();
  await expect(client.close()).resolves.toBeUndefined();
});

it('the close of a client over plain HTTP whose server stops answering resolves, the closes of its sessions cut', async () => {
  const server = await startTestServer();
  cleanups.push(() => server.close());
  const link = await unansweringProxy(server.baseUrl, cleanups);
  const client = await httpClient(link.url);
  const jobs = await client.queue('jobs', { visibility: 600_000 });
  await jobs.publish({ id: 'a' });
  const session = await jobs.openSession({ timeout: 600_000 });
  expect(await jobs.receive({ session })).toMatchObject([{ id: 'a' }]);
  link.cut();
  // Its requests would wait 600 s for an answer: a close that waited for them would not end.
  await expect(client.close()).resolves.toBeUndefined();
  expect(link.unanswered()).toBeGreaterThan(0);
  expect(await (await server.broker.queue('jobs')).stats()).toMatchObject({
    active: 1,
    sessions: 1,
  });
});

it('the close of a client over plain HTTP whose server refuses to close its sessions resolves, the sessions not counted ended', async () => {
  const refusing = { on: false };
  const server = await startTestServer();
  cleanups.push(() => server.close());
  // Its storage refuses every closeSession sent to it (they arrive as operations).
  const wrapped = withWrappedQueues(server.broker, (queue) =>
    Object.assign(Object.create(queue) as Queue, {
      execute: (operations: readonly Operation[]) =>
        refusing.on && operations.every((operation) => operation.type === 'closeSession')
          ? Promise.resolve(
              operations.map(() => ({
                ok: false,
                error: new StorageUnavailableError('the storage is down'),
              })),
            )
          : queue.execute(operations),
    }),
  );
  const app = await createApp({
    broker: wrapped,
    receiptSecret: 'test-secret-of-at-least-32-characters',
  });
  cleanups.push(() => app.close());
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const client = await httpClient(url);
  const jobs = await client.queue('jobs', { visibility: 600_000 });
  await jobs.publish({ id: 'a' });
  const session = await jobs.openSession({ timeout: 600_000 });
  expect(await jobs.receive({ session })).toMatchObject([{ id: 'a' }]);
  refusing.on = true;
  await expect(client.close()).resolves.toBeUndefined();
  expect(await (await server.broker.queue('jobs')).stats()).toMatchObject({
    active: 1,
    sessions: 1,
  });
  await expect(jobs.heartbeat(session)).rejects.toMatchObject({ code: 'CLOSED' });
});
