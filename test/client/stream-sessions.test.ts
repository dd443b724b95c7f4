import { afterEach, describe, expect, it } from 'vitest';
import { openRemote, type RemoteBroker } from '../../src/client/index.js';
import { SessionClosedError } from '../../src/core/index.js';
import { silentLogger, work } from '../../src/index.js';
import type { JobContext } from '../../src/worker/index.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

/**
 * A stream connection's sessions end with it (R16, docs/stream.md): the client knows that
 * without asking, so a worker whose server went away stops working the jobs its session held —
 * which the server released — instead of running them beside their next consumer.
 */
let server: TestServer | undefined;
let client: RemoteBroker | undefined;

afterEach(async () => {
  await client?.close();
  await server?.close();
  client = undefined;
  server = undefined;
});

describe('sessions over the stream', () => {
  it('a session opened over a connection that ended answers SESSION_CLOSED at once, the server out of reach', async () => {
    server = await startTestServer();
    client = await openRemote(server.baseUrl, { transport: 'stream', timeoutMs: 5000 });
    const q = await client.queue('jobs');
    const session = await q.openSession({ timeout: 30_000 });
    await q.heartbeat(session);
    await server.close();
    // The client hears of the close (a heartbeat sent before that fails as the connection does).
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = Date.now();
    await expect(q.heartbeat(session)).rejects.toBeInstanceOf(SessionClosedError);
    await expect(q.receive({ session, wait: 1000 })).rejects.toBeInstanceOf(SessionClosedError);
    await expect(q.ackUpTo(session, 1)).rejects.toBeInstanceOf(SessionClosedError);
    // Without reaching for the server (which would take timeoutMs and fail otherwise).
    expect(Date.now() - started).toBeLessThan(1000);
    // Closing it is answered the same way, and forgets it.
    await expect(q.closeSession(session)).rejects.toBeInstanceOf(SessionClosedError);
  });

  it('a worker whose server shut down fires session-ended at its next heartbeat, not at its lease or session end', async () => {
    server = await startTestServer();
    client = await openRemote(server.baseUrl, { transport: 'stream', timeoutMs: 5000 });
    const q = await client.queue('jobs');
    await q.publish({ id: 'a' });
    const contexts: JobContext[] = [];
    const worker = await work(
      q,
      async (_job, ctx) => {
        contexts.push(ctx);
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      },
      // Heartbeats every 2 s; the session would end 6 s after the last one, the lease in 60.
      { session: { timeout: 6000 }, visibility: 60_000, logger: silentLogger },
    );
    await expect.poll(() => contexts.length).toBe(1);
    await server.close();
    const closedAt = Date.now();
    await expect.poll(() => contexts[0]?.signal.aborted, { timeout: 5000 }).toBe(true);
    expect(Date.now() - closedAt).toBeLessThan(3500);
    expect(contexts[0]?.signal.reason).toMatchObject({
      code: 'LEASE_LOST',
      reason: 'session-ended',
    });
    await worker.close({ timeout: 0 });
  });
});
