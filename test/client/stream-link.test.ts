import { createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { RemoteBroker } from '../../src/client/index.js';
import { ClosedError } from '../../src/core/index.js';
import { freePort } from '../faults/private-postgres.js';
import { writeTextFrameSlowly } from '../stream/frames.js';
import { fakeStreamServer, READY_FRAME, READY_LIMITS } from './fake-stream-server.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** What a promise settled with within `ms`, or 'pending'. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | unknown> {
  return Promise.race([
    promise.then(
      (value) => value,
      (error: unknown) => error,
    ),
    new Promise((resolve) => setTimeout(() => resolve('pending'), ms)),
  ]);
}

/**
 * A server on 127.0.0.1 that takes connections, reads the WebSocket upgrade and never answers
 * it (a server stalled in the handshake); it keeps what it saw of each socket.
 */
async function stalledServer() {
  const sockets: { socket: Socket; received: string; closed: boolean }[] = [];
  const server = createServer((socket) => {
    const seen = { socket, received: '', closed: false };
    sockets.push(seen);
    socket.on('data', (chunk: Buffer) => {
      seen.received += chunk.toString();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      seen.closed = true;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const { socket } of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, sockets };
}

describe('the stream link', () => {
  it('gives a call at most its timeoutMs, the wait before reconnecting included', async () => {
    const client = new RemoteBroker(`http://127.0.0.1:${await freePort()}`, {
      transport: 'stream',
      timeoutMs: 300,
    });
    const queue = client.handle('jobs');
    try {
      // Each failed connection doubles the wait before the next try (50 ms up to 5 s): by the
      // seventh call it is 0.8 s or more, longer than a call may take.
      for (let call = 0; call < 8; call++) {
        const started = performance.now();
        await expect(queue.publish({ id: `job-${call}` })).rejects.toMatchObject({
          code: 'STORAGE_UNAVAILABLE',
        });
        expect(performance.now() - started).toBeLessThan(600);
      }
    } finally {
      await client.close();
    }
  });

  it('counts the time a call waited for the connection to open against its timeoutMs', async () => {
    // The client's timers and clock only: the sockets and the batcher's tick stay real.
    vi.useFakeTimers({
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance'],
    });
    let opened!: (socket: WebSocket) => void;
    const connection = new Promise<WebSocket>((resolve) => {
      opened = resolve;
    });
    let received!: () => void;
    const frame = new Promise<void>((resolve) => {
      received = resolve;
    });
    // A server slow to start the stream, which then never answers a frame.
    const url = await fakeStreamServer((socket) => {
      socket.once('message', () => received());
      opened(socket);
    }, cleanups);
    const client = new RemoteBroker(url, { transport: 'stream', timeoutMs: 1000 });
    cleanups.push(() => client.close({ signal: AbortSignal.abort() }));
    let failure: unknown;
    const published = client
      .handle('jobs')
      .publish({ id: 'a' })
      .catch((error: unknown) => {
        failure = error;
      });
    const socket = await connection;
    // 600 of the call's 1000 ms go by before the stream starts.
    await vi.advanceTimersByTimeAsync(600);
    socket.send(READY_FRAME);
    await frame;
    // The call's 1000 ms are over: it has failed, sent and unanswered, not waited 1000 ms more.
    await vi.advanceTimersByTimeAsync(400);
    expect(failure).toMatchObject({
      code: 'STORAGE_UNAVAILABLE',
      mayHaveTakenEffect: true,
      message: expect.stringContaining('did not answer within 1000 ms'),
    });
    await published;
  });

  it('close() during the handshake fails the waiting calls with CLOSED at once and ends the socket', async () => {
    const server = await stalledServer();
    const client = new RemoteBroker(server.url, { transport: 'stream', timeoutMs: 10_000 });
    cleanups.push(() => client.close());
    const queue = client.handle('jobs');
    const publish = queue.publish({ id: 'a' });
    const stats = queue.execute([{ type: 'stats' }]);
    // The upgrade request has reached the server, which does not answer it.
    await expect
      .poll(() => server.sockets[0]?.received.includes('\r\n\r\n'), { timeout: 5000 })
      .toBe(true);
    const started = performance.now();
    await client.close();
    const [published, counted] = await Promise.all([within(publish, 1000), within(stats, 1000)]);
    expect(published).toBeInstanceOf(ClosedError);
    expect(published).toMatchObject({ code: 'CLOSED', message: 'the client is closed' });
    expect(counted).toBeInstanceOf(ClosedError);
    expect(performance.now() - started).toBeLessThan(1000);
    // The socket being opened is ended too: nothing holds the process or the server's count.
    await expect.poll(() => server.sockets[0]?.closed, { timeout: 1000 }).toBe(true);
    expect(server.sockets).toHaveLength(1);
    await expect(queue.publish({ id: 'b' })).rejects.toBeInstanceOf(ClosedError);
  });

  it('close() during the handshake does not wait for an at-most-once receive that could not be sent, which answers empty', async () => {
    const server = await stalledServer();
    const client = new RemoteBroker(server.url, { transport: 'stream', timeoutMs: 10_000 });
    cleanups.push(() => client.close({ signal: AbortSignal.abort() }));
    const receiving = client.handle('jobs').receive({ wait: 5000, ack: 'auto' });
    await expect
      .poll(() => server.sockets[0]?.received.includes('\r\n\r\n'), { timeout: 5000 })
      .toBe(true);
    // Its look never went out: the close has nothing to wait for. With the client's timers
    // stopped, a close that waited for its answers (2 s at most) would not end.
    const realTimeout = setTimeout;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const closed = await Promise.race([
      client.close().then(() => 'closed'),
      new Promise((resolve) => realTimeout(() => resolve('still closing'), 3000)),
    ]);
    expect(closed).toBe('closed');
    expect(await receiving).toEqual([]);
  });

  it('a stream closed by the server before it started fails its waiting call as never sent', async () => {
    // A WebSocket server that accepts the upgrade and closes before its ready frame.
    const url = await fakeStreamServer((socket) => socket.close(), cleanups);
    const client = new RemoteBroker(url, { transport: 'stream', timeoutMs: 10_000 });
    cleanups.push(() => client.close());
    // Not CONNECTION_LOST ("may or may not have taken effect"): nothing went out, so a retry
    // is safe whatever the call.
    await expect(client.handle('jobs').publish({ id: 'a' })).rejects.toMatchObject({
      code: 'STORAGE_UNAVAILABLE',
      message: expect.stringContaining('nothing was sent'),
    });
  });

  it('a frame that is not JSON ends the connection with a typed error, never an uncaught one', async () => {
    let started = true;
    const url = await fakeStreamServer((socket) => {
      if (!started) {
        socket.send('not json');
        return;
      }
      socket.send(READY_FRAME);
      socket.once('message', () => socket.send('{"no": "type"'));
    }, cleanups);
    const client = new RemoteBroker(url, { transport: 'stream', timeoutMs: 10_000 });
    cleanups.push(() => client.close());
    await expect(client.handle('jobs').stats()).rejects.toMatchObject({ code: 'CONNECTION_LOST' });
    started = false;
    await expect(client.handle('jobs').stats()).rejects.toMatchObject({
      code: 'STORAGE_UNAVAILABLE',
      message: expect.stringContaining('did not start the stream'),
    });
  });

  it('a ready frame without limits starts nothing, and a frame of the wrong shape ends the stream', async () => {
    let withLimits = false;
    const url = await fakeStreamServer((socket) => {
      if (!withLimits) {
        socket.send(JSON.stringify({ type: 'ready', version: '1' }));
        return;
      }
      socket.send(READY_FRAME);
      // An error answer without its error: a server of another version, or a broken one.
      socket.once('message', (data) => {
        const { id } = JSON.parse(String(data)) as { id: number };
        socket.send(JSON.stringify({ type: 'error', id }));
      });
    }, cleanups);
    const client = new RemoteBroker(url, { transport: 'stream', timeoutMs: 10_000 });
    cleanups.push(() => client.close());
    await expect(client.handle('jobs').stats()).rejects.toMatchObject({
      code: 'STORAGE_UNAVAILABLE',
      message: expect.stringContaining('did not start the stream'),
    });
    withLimits = true;
    await expect(client.handle('jobs').stats()).rejects.toMatchObject({ code: 'CONNECTION_LOST' });
  });

  it('a server whose pushes carry no now (older than the client) is refused once, saying to upgrade it, and not connected to again', async () => {
    // The stream as it first was: deliveries pushed without the server's time.
    let connections = 0;
    const url = await fakeStreamServer((socket) => {
      connections += 1;
      socket.send(READY_FRAME);
      socket.on('message', (data) => {
        const frame = JSON.parse(String(data)) as { type: string; id: number; prefetch?: number };
        if (frame.type === 'subscribe') {
          socket.send(
            JSON.stringify({
              type: 'subscribed',
              id: frame.id,
              subscription: frame.id,
              prefetch: frame.prefetch,
            }),
          );
          socket.send(
            JSON.stringify({
              type: 'deliveries',
              subscription: frame.id,
              deliveries: [
                {
                  receipt: 'r1',
                  token: 1,
                  id: 'a',
                  payload: null,
                  deadline: Date.now() + 30_000,
                  deliveryCount: 1,
                  redelivered: false,
                },
              ],
            }),
          );
        } else if (frame.type === 'batch') {
          const { operations } = frame as unknown as { operations: unknown[] };
          const results = operations.map(() => ({ ok: true, value: [] }));
          socket.send(JSON.stringify({ type: 'results', id: frame.id, results }));
        }
      });
    }, cleanups);
    const client = new RemoteBroker(url, { transport: 'stream', timeoutMs: 5_000 });
    cleanups.push(() => client.close());
    const queue = client.handle('jobs');
    const refused = {
      code: 'UNSUPPORTED',
      message: expect.stringMatching(/older than this client.*Upgrade the server/),
    };
    await expect(queue.receive({ wait: 1000 })).rejects.toMatchObject(refused);
    // Refused for good: no connection again, whose subscribe would be pushed jobs once more.
    await expect(queue.receive({ wait: 1000 })).rejects.toMatchObject(refused);
    await expect(queue.publish({ id: 'b' })).rejects.toMatchObject(refused);
    expect(connections).toBe(1);
  });

  it('takes an answer larger than 100 MiB, as an HTTP answer of any size is read', async () => {
    // ws's default bound on a message read (100 MiB), and a little more.
    const length = 100 * 1024 * 1024 + 1024;
    const url = await fakeStreamServer((socket) => {
      socket.send(READY_FRAME);
      socket.on('message', (data) => {
        const { id } = JSON.parse(String(data)) as { id: number };
        // A results frame of one outcome whose value holds a string of `length` x's.
        const head = Buffer.from(
          `{"type":"results","id":${id},"results":[{"ok":true,"value":{"note":"`,
        );
        const tail = Buffer.from('"}}]}');
        socket.send(Buffer.concat([head, Buffer.alloc(length, 'x'), tail]), { binary: false });
      });
    }, cleanups);
    const client = new RemoteBroker(url, { transport: 'stream', timeoutMs: 30_000 });
    cleanups.push(() => client.close());
    const stats = (await client.handle('jobs').stats()) as unknown as { note: string };
    expect(stats.note).toHaveLength(length);
  });

  it('hears the bytes of an answer that comes slowly, so a link slower than a frame per heartbeat does not end the connection', async () => {
    // A server that answers no ping (its pong would wait behind the frame anyway), and writes
    // its answer in 100 parts 25 ms apart: 2.5 s, five of its heartbeat intervals.
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0, autoPong: false });
    const writers: NodeJS.Timeout[] = [];
    server.on('connection', (socket) => {
      socket.send(
        JSON.stringify({
          type: 'ready',
          version: '1',
          limits: { ...READY_LIMITS, heartbeatMs: 500 },
        }),
      );
      socket.on('message', (data) => {
        const { id } = JSON.parse(String(data)) as { id: number };
        const text = Buffer.from(
          `{"type":"results","id":${id},"results":[{"ok":true,"value":{"note":"${'x'.repeat(100_000)}"}}]}`,
        );
        // A server's frame: unmasked.
        writers.push(writeTextFrameSlowly(socket, text, false));
      });
    });
    await new Promise<void>((resolve) => server.once('listening', resolve));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const writer of writers) clearInterval(writer);
          for (const client of server.clients) client.terminate();
          server.close(() => resolve());
        }),
    );
    const { port } = server.address() as { port: number };
    const client = new RemoteBroker(`http://127.0.0.1:${port}`, {
      transport: 'stream',
      timeoutMs: 30_000,
    });
    cleanups.push(() => client.close());
    const stats = (await client.handle('jobs').stats()) as unknown as { note: string };
    expect(stats.note).toHaveLength(100_000);
  });

  it('close() fails at once a call waiting out the backoff before reconnecting', async () => {
    const client = new RemoteBroker(`http://127.0.0.1:${await freePort()}`, {
      transport: 'stream',
      timeoutMs: 10_000,
    });
    cleanups.push(() => client.close());
    const queue = client.handle('jobs');
    // Connections refused at once, one after the other: the wait before the next grows to
    // 50 ms × 2^5 after the sixth (at least half of it: 0.8 s).
    for (let call = 0; call < 6; call++) {
      await expect(queue.publish({ id: `job-${call}` })).rejects.toMatchObject({
        code: 'STORAGE_UNAVAILABLE',
      });
    }
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout');
    const before = timers().length;
    const waiting = queue.publish({ id: 'waits' });
    // The backoff's timer (and the call's own timeout) hold the process while it waits: polled,
    // not slept on, since a loaded machine may take a while to arm them (the wait is ≥ 0.8 s).
    const armedBy = performance.now() + 500;
    while (timers().length <= before && performance.now() < armedBy) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(timers().length).toBeGreaterThan(before);
    const started = performance.now();
    await client.close();
    // None is left to hold the process after close().
    expect(timers().length).toBeLessThanOrEqual(before);
    expect(await within(waiting, 1000)).toBeInstanceOf(ClosedError);
    expect(performance.now() - started).toBeLessThan(500);
  });
});
