import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { SessionClosedError } from '../../src/core/index.js';
import { captureLogs, startTestServer } from '../server/helpers.js';

// R16 over the stream: a session the server ended (its heartbeat timeout passed, as for a
// worker whose handler outlived its ack timeout) is forgotten by the connection on both sides,
// not kept until the connection ends and then closed again, one storage call each.
const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** The sessions the client remembers to close (a private part of its stream channel). */
function remembered(client: RemoteBroker): number {
  const channel = (client as unknown as { channel: { sessions: Map<string, unknown> } }).channel;
  return channel.sessions.size;
}

describe('sessions the server ended, over one stream connection', () => {
  it('R16 are forgotten by the server and the client once an answer says so', async () => {
    const { lines, logger } = captureLogs('debug');
    const server = await startTestServer({ logger });
    closing.push(() => server.close());
    await server.broker.queue('jobs');
    const client = new RemoteBroker(server.baseUrl, { transport: 'stream' });
    closing.push(() => client.close());
    const queue = await client.queue('jobs');
    const beaten = await Promise.all(
      Array.from({ length: 10 }, () => queue.openSession({ timeout: 100 })),
    );
    const received = await queue.openSession({ timeout: 100 });
    await queue.openSession({ timeout: 60_000 });
    expect(remembered(client)).toBe(12);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Learnt by a heartbeat's answer, or by a receive's (a subscription the server ended).
    for (const session of beaten) {
      await expect(queue.heartbeat(session)).rejects.toBeInstanceOf(SessionClosedError);
    }
    await expect(queue.receive({ session: received, wait: 1_000 })).rejects.toBeInstanceOf(
      SessionClosedError,
    );
    expect(remembered(client)).toBe(1);
    await client.close();
    // The connection's end closes the one session still open, and tries no other.
    const until = Date.now() + 5_000;
    while (!lines.some((line) => line.msg === 'session closed with its stream connection')) {
      if (Date.now() > until) throw new Error('the open session was not closed');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(lines.filter((line) => line.msg === 'session already ended')).toEqual([]);
    expect((await server.broker.handle('jobs').stats()).sessions).toBe(0);
  });
});
