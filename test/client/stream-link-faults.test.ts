import { createServer, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { startTestServer } from '../server/helpers.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A TCP proxy on 127.0.0.1 in front of `target`, whose way back to the client can be made to
 * lose packets: `swallowAfterUpgrade` drops what the server sends once the WebSocket upgrade was
 * answered (a link that died silently, no FIN or RST), `holding` keeps it back until `release`,
 * `holdingUp` keeps back what the client sends until `releaseUp`.
 */
async function proxy(target: string) {
  const { hostname, port: targetPort } = new URL(target);
  const state = { swallowAfterUpgrade: false, holding: false, holdingUp: false };
  const held: { client: Socket; chunk: Buffer }[] = [];
  const heldUp: { upstream: Socket; chunk: Buffer }[] = [];
  const sockets: Socket[] = [];
  const server = createServer((client) => {
    const upstream = new Socket();
    sockets.push(client, upstream);
    const swallow = state.swallowAfterUpgrade;
    let upgraded = false;
    upstream.connect(Number(targetPort), hostname);
    client.on('data', (chunk: Buffer) => {
      if (state.holdingUp) heldUp.push({ upstream, chunk });
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (swallow && upgraded) return;
      if (swallow) {
        // The answer to the upgrade reaches the client; whatever follows it does not.
        const end = chunk.indexOf('\r\n\r\n');
        upgraded = end >= 0 && chunk.subarray(0, 12).toString() === 'HTTP/1.1 101';
        client.write(upgraded ? chunk.subarray(0, end + 4) : chunk);
        return;
      }
      if (state.holding) held.push({ client, chunk });
      else client.write(chunk);
    });
    for (const [one, other] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      one.on('error', () => other.destroy());
      // A link that dies silently never passes the other side's close on.
      one.on('close', () => {
        if (!swallow) other.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    state,
    release() {
      state.holding = false;
      for (const { client, chunk } of held.splice(0)) client.write(chunk);
    },
    releaseUp() {
      state.holdingUp = false;
      for (const { upstream, chunk } of heldUp.splice(0)) upstream.write(chunk);
    },
  };
}

/**
 * A stream client (timeoutMs 400) of a server's queue `jobs`, through a proxy whose answers
 * were then held back: its receive on `jobs` has failed, its subscribe left unanswered.
 */
async function subscribeTimedOut() {
  const server = await startTestServer();
  cleanups.push(() => server.close());
  const jobs = await server.broker.queue('jobs', { visibility: 60_000 });
  const link = await proxy(server.baseUrl);
  const client = new RemoteBroker(link.url, { transport: 'stream', timeoutMs: 400 });
  cleanups.push(() => client.close());
  // The connection is open; then its answers come late, the connection alive.
  await (await client.queue('warm')).publish({ id: 'warm' });
  link.state.holding = true;
  await expect(client.handle('jobs').receive({ wait: 10_000 })).rejects.toMatchObject({
    code: 'STORAGE_UNAVAILABLE',
  });
  return { jobs, link };
}

describe('the stream link over a link that fails silently', () => {
  it('a connection whose ready frame never comes is given up after timeoutMs, and the next call connects again', async () => {
    const server = await startTestServer();
    cleanups.push(() => server.close());
    const link = await proxy(server.baseUrl);
    link.state.swallowAfterUpgrade = true;
    const client = new RemoteBroker(link.url, { transport: 'stream', timeoutMs: 500 });
    cleanups.push(() => client.close());
    const queue = client.handle('jobs');
    await server.broker.queue('jobs');
    await expect(queue.publish({ id: 'lost' })).rejects.toMatchObject({
      code: 'STORAGE_UNAVAILABLE',
    });
    link.state.swallowAfterUpgrade = false;
    // Within a few backoffs (50 ms, doubling), a call gets through on a new connection.
    const deadline = Date.now() + 5000;
    let published: unknown;
    while (published === undefined && Date.now() < deadline) {
      published = await queue.publish({ id: 'later' }).catch(() => undefined);
    }
    expect(published).toMatchObject({ id: 'later' });
    expect(await (await server.broker.queue('jobs')).job('later')).toMatchObject({
      state: 'ready',
    });
  });

  it('a subscribe answered after its timeoutMs is ended at once: it takes no job for nobody', async () => {
    const { jobs, link } = await subscribeTimedOut();
    await sleep(200);
    link.release();
    await sleep(300);
    // Nobody receives from this client any more: a job published now is another consumer's.
    await jobs.publish({ id: 'next' });
    const seen: number[] = [];
    for (let look = 0; look < 10; look += 1) {
      seen.push((await jobs.stats()).active);
      await sleep(50);
    }
    expect(seen.filter((active) => active > 0)).toEqual([]);
    expect((await jobs.receive({ max: 1 })).map((delivery) => delivery.id)).toEqual(['next']);
  });

  it('pushes of an abandoned subscribe that come after its unsubscribe timed out still go back', async () => {
    const { jobs, link } = await subscribeTimedOut();
    // The late answer comes; the unsubscribe it sends is held long past its own timeout.
    link.state.holdingUp = true;
    link.release();
    await sleep(700);
    // The subscription, still open on the server, is pushed a job.
    await jobs.publish({ id: 'pushed-late' });
    await sleep(200);
    link.releaseUp();
    const deadline = Date.now() + 5000;
    while ((await jobs.job('pushed-late'))?.state !== 'ready' && Date.now() < deadline) {
      await sleep(50);
    }
    expect(await jobs.job('pushed-late')).toMatchObject({ state: 'ready' });
  });
});
