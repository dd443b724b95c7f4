import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { SessionClosedError } from '../../src/core/index.js';
import { TcpProxy } from '../faults/tcp-proxy.js';
import { startTestServer } from '../server/helpers.js';

// A stream client keeps one subscription per queue, visibility and session its receives wait
// on. A session that ended (with its connection, or by its timeout) takes its subscription
// with it: a worker opens a session anew each time one ends, and the ended ones' would
// otherwise pile up for as long as the client lives.
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The client's subscriptions and the sessions it remembers (private parts of its channel). */
function held(client: RemoteBroker): { subscriptions: number; sessions: number } {
  const { channel } = client as unknown as {
    channel: { prefetches: Map<string, unknown>; sessions: Map<string, unknown> };
  };
  return { subscriptions: channel.prefetches.size, sessions: channel.sessions.size };
}

describe('subscriptions of sessions that ended', () => {
  it('are not kept once their connection was lost and the next one closed their sessions', async () => {
    const server = await startTestServer();
    cleanups.push(() => server.close());
    await server.broker.queue('jobs');
    const proxy = new TcpProxy(Number(new URL(server.baseUrl).port));
    const address = await proxy.listen();
    cleanups.push(() => proxy.close());
    const client = new RemoteBroker(`http://${address}`, { transport: 'stream' });
    cleanups.push(() => client.close());
    const queue = client.handle('jobs');
    // A consumer that goes on (a worker passes its stop signal to every receive).
    const consumer = new AbortController();
    for (let round = 0; round < 3; round++) {
      const session = await queue.openSession({ timeout: 60_000 });
      await queue.publish({ id: `job-${round}` });
      const [job] = await queue.receive({ session, wait: 5000, signal: consumer.signal });
      expect(job?.id).toBe(`job-${round}`);
      expect(await queue.ack(job?.token ?? 0)).toBe(true);
      proxy.cut();
      // Once the client has seen the connection end, the session is over, said at once.
      await expect
        .poll(() =>
          queue.heartbeat(session).then(
            () => 'open',
            (error: { code?: string }) => error.code,
          ),
        )
        .toBe('SESSION_CLOSED');
    }
    // The next connection closes the lost ones' sessions on the server, and forgets them.
    await queue.stats();
    await expect.poll(() => held(client).sessions).toBe(0);
    expect(held(client).subscriptions).toBe(0);
  });

  it('are not kept once the server ended their session', async () => {
    const server = await startTestServer();
    cleanups.push(() => server.close());
    await server.broker.queue('jobs');
    const client = new RemoteBroker(server.baseUrl, { transport: 'stream' });
    cleanups.push(() => client.close());
    const queue = client.handle('jobs');
    const session = await queue.openSession({ timeout: 100 });
    const consumer = new AbortController();
    await expect(
      queue.receive({ session, wait: 5000, signal: consumer.signal }),
    ).rejects.toBeInstanceOf(SessionClosedError);
    expect(held(client)).toEqual({ subscriptions: 0, sessions: 0 });
  });
});
