import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openRemote, type RemoteBroker } from '../../src/client/index.js';
import { SessionClosedError } from '../../src/core/index.js';
import { silentLogger, work } from '../../src/index.js';
import type { JobContext } from '../../src/worker/index.js';
import { ServerProcess } from '../faults/server-process.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

/**
 * A stream connection's sessions end with it (R16, docs/stream.md): the client knows that
 * without asking, so a worker whose server went away stops working the jobs its session held —
 * which the server released — instead of running them beside their next consumer.
 */
let server: TestServer | undefined;
let client: RemoteBroker | undefined;
const cleanups: (() => Promise<unknown> | unknown)[] = [];

afterEach(async () => {
  await client?.close();
  await server?.close();
  client = undefined;
  server = undefined;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `leaseq serve` (the built CLI) on `storage`, killed after the test. */
async function serve(
  storage: string,
  port: number | undefined,
  maxBatch: number | undefined,
): Promise<ServerProcess> {
  // The child takes this process's environment as it starts.
  const before = process.env.LEASEQ_MAX_BATCH;
  if (maxBatch !== undefined) process.env.LEASEQ_MAX_BATCH = String(maxBatch);
  let child: ServerProcess;
  try {
    child = new ServerProcess(
      { storage, durability: 'os', ...(port === undefined ? {} : { port }) },
      'server',
    );
  } finally {
    if (before === undefined) delete process.env.LEASEQ_MAX_BATCH;
    else process.env.LEASEQ_MAX_BATCH = before;
  }
  cleanups.push(() => child.kill());
  await child.listening();
  return child;
}

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

  it.each([
    ['', undefined],
    [', one operation to a frame', 1],
  ])(
    'after a server crash, the next connection closes the sessions of the lost one: their deliveries are ready again at once%s',
    async (_, maxBatch) => {
      const dir = mkdtempSync(join(tmpdir(), 'leaseq-client-sessions-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const storage = `sqlite:${join(dir, 'leaseq.db')}`;
      const first = await serve(storage, undefined, maxBatch);
      client = await openRemote(first.url as string, { transport: 'stream', timeoutMs: 5000 });
      const q = await client.queue('jobs', { visibility: 60_000 });
      // The counts are read over plain HTTP: a stats call over the stream would connect it.
      const admin = await openRemote(first.url as string, { transport: 'http' });
      cleanups.push(() => admin.close());
      const counts = admin.handle('jobs');
      await Promise.all([q.publish({ id: 'a' }), q.publish({ id: 'b' })]);
      // Two sessions, closed in one frame or (maxBatch 1) two; the second holds nothing.
      const session = await q.openSession({ timeout: 60_000 });
      const idle = await q.openSession({ timeout: 60_000 });
      for (const _ of ['a', 'b']) expect(await q.receive({ session })).toHaveLength(1);
      expect(await counts.stats()).toMatchObject({ ready: 0, active: 2, sessions: 2 });
      // SIGKILL: the server closes nothing; its sessions stay open in the file.
      await first.kill();
      await serve(storage, first.port, maxBatch);
      expect(await counts.stats()).toMatchObject({ ready: 0, active: 2, sessions: 2 });
      // The client holds them ended all the same, and says so without a connection.
      await expect(q.heartbeat(session)).rejects.toBeInstanceOf(SessionClosedError);
      // Any call over the stream connects again; that connection closes them first.
      const started = Date.now();
      await q.publish({ id: 'c' });
      await expect
        .poll(async () => counts.stats(), { timeout: 3000, interval: 50 })
        .toMatchObject({ ready: 3, active: 0, sessions: 0 });
      // Well before the sessions' 60 s timeout (or the leases').
      expect(Date.now() - started).toBeLessThan(3000);
      // Still ended for the user, now on the server too.
      await expect(q.closeSession(session)).rejects.toBeInstanceOf(SessionClosedError);
      await expect(q.heartbeat(idle)).rejects.toBeInstanceOf(SessionClosedError);
      expect(await q.receive()).toHaveLength(1);
    },
    60_000,
  );

  it('R16 after a server crash, a close with no call before it closes the sessions of the lost connection: their deliveries are ready again at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-client-sessions-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const storage = `sqlite:${join(dir, 'leaseq.db')}`;
    const first = await serve(storage, undefined, undefined);
    const closing = await openRemote(first.url as string, { transport: 'stream', timeoutMs: 5000 });
    cleanups.push(() => closing.close());
    const q = await closing.queue('jobs', { visibility: 60_000 });
    const admin = await openRemote(first.url as string, { transport: 'http' });
    cleanups.push(() => admin.close());
    const counts = admin.handle('jobs');
    await q.publish({ id: 'a' });
    const session = await q.openSession({ timeout: 60_000 });
    expect(await q.receive({ session })).toHaveLength(1);
    // SIGKILL: the server closes nothing; its session stays open in the file.
    await first.kill();
    // The client sees its connection end (a private part of its stream channel).
    const link = (closing as unknown as { channel: { link: { connected: boolean } } }).channel.link;
    await expect.poll(() => link.connected).toBe(false);
    await serve(storage, first.port, undefined);
    expect(await counts.stats()).toMatchObject({ ready: 0, active: 1, sessions: 1 });
    // The close is the client's next call: it closes them there, and answers once it has.
    await closing.close();
    expect(await counts.stats()).toMatchObject({ ready: 1, active: 0, sessions: 0 });
  }, 60_000);

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

describe('operations on a whole session over the stream, with deliveries held unhanded', () => {
  /**
   * A receive with a wait in a session subscribes: the server pushes the session's next jobs,
   * which the client holds for the next receive. ackUpTo, nackUpTo and closeSession act on what
   * the session's consumers had, as over plain HTTP: the held ones go back unworked first.
   */
  async function heldInSession() {
    server = await startTestServer();
    client = await openRemote(server.baseUrl);
    const queue = await client.queue('held', { visibility: 60_000, maxDeliveries: 1 });
    await queue.publishBatch([{ id: 'x' }, { id: 'y' }, { id: 'z' }]);
    const session = await queue.openSession();
    const [x] = await queue.receive({ max: 1, session, wait: 1000 });
    expect(x?.id).toBe('x');
    // The ack gives the credit back: the server pushes y, which the client holds.
    expect(await queue.ack((x as NonNullable<typeof x>).token)).toBe(true);
    const stored = server.broker.handle('held');
    await vi.waitFor(async () => expect((await stored.stats()).active).toBe(1));
    return { queue, session, stored };
  }

  it('ackUpTo acks only what was handed out: the held job is ready again, not acked', async () => {
    const { queue, session, stored } = await heldInSession();
    expect(await queue.ackUpTo(session, Number.MAX_SAFE_INTEGER)).toBe(0);
    expect(await stored.stats()).toMatchObject({ acks: 1, active: 0, ready: 2, dead: 0 });
    expect(await stored.job('y')).toMatchObject({ state: 'ready', deliveryCount: 0 });
  });

  it('closeSession releases only what was handed out: a held job does not die of a delivery nobody had', async () => {
    const { queue, session, stored } = await heldInSession();
    await queue.closeSession(session);
    // maxDeliveries 1: released by the close as a delivery, y would have died.
    expect(await stored.stats()).toMatchObject({ active: 0, ready: 2, dead: 0 });
    expect(await stored.job('y')).toMatchObject({ state: 'ready', deliveryCount: 0 });
    await expect(queue.receive({ max: 1, session })).rejects.toBeInstanceOf(SessionClosedError);
  });
});
