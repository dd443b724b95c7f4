import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { ValidationError } from '../../src/core/index.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * An HTTP proxy on 127.0.0.1 (a load balancer, say) that passes each request to `target`, or,
 * with no target, cuts the request's connection (a server that died as it came in). The
 * client's connections to it stay open whatever the target.
 */
async function switchingProxy(first: TestServer) {
  let target: TestServer | undefined = first;
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (target === undefined) {
      request.socket.destroy();
      return;
    }
    const body = Buffer.concat(chunks);
    const answer = await fetch(`${target.baseUrl}${request.url ?? '/'}`, {
      method: request.method ?? 'GET',
      headers: {
        accept: 'application/json',
        ...(body.length === 0 ? {} : { 'content-type': 'application/json' }),
      },
      ...(body.length === 0 ? {} : { body }),
    });
    response.writeHead(answer.status, {
      'content-type': answer.headers.get('content-type') ?? 'application/json',
    });
    response.end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    /** The server behind it restarted as `next` (undefined: down). */
    restartAs(next: TestServer | undefined) {
      target = next;
    },
  };
}

/** Ten publishes of one tick: one request while the server takes ten operations in one. */
function tenPublishes(client: RemoteBroker, prefix: string) {
  const queue = client.handle('jobs');
  return Promise.allSettled(
    Array.from({ length: 10 }, (_, n) => queue.publish({ id: `${prefix}-${n}` })),
  );
}

/** A server before its restart, and the one after it, which takes at most 5 in a batch. */
async function servers() {
  const before = await startTestServer();
  cleanups.push(() => before.close());
  const after = await startTestServer({ limits: { maxBatch: 5 } });
  cleanups.push(() => after.close());
  await after.broker.queue('jobs');
  return { before, after };
}

/**
 * An HTTP client through the proxy to the server before its restart, which took a first tick of
 * ten publishes whole (its limits read, 100 a batch).
 */
async function clientOfFirstServer() {
  const { before, after } = await servers();
  const proxy = await switchingProxy(before);
  const client = new RemoteBroker(proxy.url, { transport: 'http' });
  cleanups.push(() => client.close());
  await client.queue('jobs');
  const first = await tenPublishes(client, 'first');
  expect(first.filter((result) => result.status === 'rejected')).toEqual([]);
  return { after, proxy, client };
}

describe('the HTTP client reads the server limits again', () => {
  it('after a request the server refused whole: one restarted with a lower maxBatch is then met', async () => {
    const { after, proxy, client } = await clientOfFirstServer();
    proxy.restartAs(after);
    // Shaped by the limits read before the restart, this tick's request is refused whole.
    for (const result of await tenPublishes(client, 'refused')) {
      expect(result).toMatchObject({ status: 'rejected', reason: expect.any(ValidationError) });
    }
    const next = await tenPublishes(client, 'next');
    expect(next.filter((result) => result.status === 'rejected')).toEqual([]);
    expect(await client.handle('jobs').limits()).toMatchObject({ maxBatch: 5 });
    expect(await (await after.broker.queue('jobs')).stats()).toMatchObject({ ready: 10 });
  });

  it('after a request that got no answer: the server back with a lower maxBatch is met at once', async () => {
    const { after, proxy, client } = await clientOfFirstServer();
    proxy.restartAs(undefined);
    await expect(client.handle('jobs').publish({ id: 'down' })).rejects.toMatchObject({
      code: expect.stringMatching(/^(CONNECTION_LOST|STORAGE_UNAVAILABLE)$/),
    });
    proxy.restartAs(after);
    const next = await tenPublishes(client, 'next');
    expect(next.filter((result) => result.status === 'rejected')).toEqual([]);
    expect(await (await after.broker.queue('jobs')).stats()).toMatchObject({ ready: 10 });
  });
});
