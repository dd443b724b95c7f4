import { createHash } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { ClosedError } from '../../src/core/index.js';
import { READY_FRAME } from './fake-stream-server.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** What one connection to a raw server did: the bytes it received, and whether it ended. */
interface Seen {
  socket: Socket;
  received: Buffer;
  closed: boolean;
}

/**
 * A TCP server on 127.0.0.1 that does `onRequest` with each connection once its HTTP request
 * has come in whole, and nothing else: it never reads a WebSocket close frame, never answers
 * one, and never closes a connection by itself.
 */
async function rawServer(onRequest: (socket: Socket, request: string) => void) {
  const seen: Seen[] = [];
  const server = createServer((socket) => {
    const entry: Seen = { socket, received: Buffer.alloc(0), closed: false };
    seen.push(entry);
    let answered = false;
    socket.on('data', (chunk: Buffer) => {
      entry.received = Buffer.concat([entry.received, chunk]);
      const text = entry.received.toString('latin1');
      if (!answered && text.includes('\r\n\r\n')) {
        answered = true;
        onRequest(socket, text);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      entry.closed = true;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const { socket } of seen) socket.destroy();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, seen };
}

/** What `promise` settles with, its error as a value: caught at once, never unhandled. */
function settled(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => value,
    (error: unknown) => error,
  );
}

/** Accepts a WebSocket upgrade and sends the ready frame, by hand (RFC 6455). */
function acceptWithReady(socket: Socket, request: string): void {
  const key = /^sec-websocket-key:\s*(\S+)/im.exec(request)?.[1] ?? '';
  const accept = createHash('sha1')
    .update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
    .digest('base64');
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      `Sec-WebSocket-Accept: ${accept}\r\n\r\n`,
  );
  const payload = Buffer.from(READY_FRAME);
  // A final text frame, unmasked as a server's are; the ready frame is under 64 KiB.
  const header = Buffer.from([0x81, 126, payload.length >> 8, payload.length & 0xff]);
  socket.write(Buffer.concat([header, payload]));
}

describe('a stream server that stops answering', () => {
  it('close() ends the connection although the server never answers the close', async () => {
    const server = await rawServer(acceptWithReady);
    const client = new RemoteBroker(server.url, { transport: 'stream', timeoutMs: 20_000 });
    cleanups.push(() => client.close());
    const publish = settled(client.handle('jobs').publish({ id: 'a' }));
    // The batch frame has gone out after the upgrade request: the connection is open.
    await expect
      .poll(() => server.seen[0]?.received.includes(Buffer.from([0x81])) ?? false)
      .toBe(true);
    await client.close();
    expect(await publish).toBeInstanceOf(ClosedError);
    // Nothing of the client is left holding the socket (and so the process) open.
    await expect.poll(() => server.seen[0]?.closed).toBe(true);
    expect(server.seen).toHaveLength(1);
  });

  it('close() with an aborted signal ends the connection at once', async () => {
    const server = await rawServer(acceptWithReady);
    const client = new RemoteBroker(server.url, { transport: 'stream', timeoutMs: 20_000 });
    cleanups.push(() => client.close());
    const stats = settled(client.handle('jobs').stats());
    await expect
      .poll(() => server.seen[0]?.received.includes(Buffer.from([0x81])) ?? false)
      .toBe(true);
    await client.close({ signal: AbortSignal.abort() });
    expect(await stats).toBeInstanceOf(ClosedError);
    await expect.poll(() => server.seen[0]?.closed).toBe(true);
  });
});

describe('a refused stream upgrade whose answer is cut short', () => {
  it('fails the call as soon as the connection breaks, saying what came back and that nothing was sent', async () => {
    // A proxy's error page, cut off by the connection's end before its Content-Length.
    const server = await rawServer((socket) => {
      socket.write(
        'HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: 100\r\n\r\n<html>',
      );
      socket.destroy();
    });
    // Longer than the wait for a call's answer would be: the call fails when the link breaks.
    const client = new RemoteBroker(server.url, { transport: 'stream', timeoutMs: 20_000 });
    cleanups.push(() => client.close());
    const failure = await settled(client.handle('jobs').publish({ id: 'a' }));
    expect(failure).toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
    const { message } = failure as Error;
    expect(message).toContain('502');
    expect(message).toContain('nothing was sent');
    expect(message).not.toContain('within 20000 ms');
  });
});

describe('a stream server that never answers the upgrade', () => {
  it('a waiting receive whose signal aborts while the connection opens answers empty at once', async () => {
    // The TCP connection is made (a server that hangs, a balancer whose backend is gone): the
    // handshake would wait out timeoutMs, and fail the receive with STORAGE_UNAVAILABLE then.
    const server = await rawServer(() => {});
    const client = new RemoteBroker(server.url, { transport: 'stream', timeoutMs: 10_000 });
    cleanups.push(() => client.close({ signal: AbortSignal.abort() }));
    const stop = new AbortController();
    const receive = settled(client.handle('jobs').receive({ wait: 60_000, signal: stop.signal }));
    await expect.poll(() => server.seen[0]?.received.length ?? 0).toBeGreaterThan(0);
    // A worker stopping: its receive waits for nothing more, as while it waits for pushes.
    stop.abort();
    expect(await receive).toEqual([]);
    // The connection still opening is not given up with it: the client's other calls may use it.
    expect(server.seen[0]?.closed).toBe(false);
  });
});
