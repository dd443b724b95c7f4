import { createServer, Socket } from 'node:net';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';

/** What a test undoes after it, last first. */
export type Cleanups = (() => Promise<unknown> | unknown)[];

/**
 * A TCP proxy on 127.0.0.1 in front of `target`. Once `cut()`, the server is out of reach in a
 * way that accepts connections and never answers (a backend gone behind a balancer, a
 * black-holed route): what is sent either way over the connections made so far is kept, not
 * passed on, and a connection made since is accepted and goes nowhere, until `release()`
 * passes on all of it. `drop()` ends every connection made so far.
 */
export async function unansweringProxy(target: string, cleanups: Cleanups) {
  const { hostname, port: targetPort } = new URL(target);
  const state = { cut: false };
  const released: (() => void)[] = [];
  const sockets: Socket[] = [];
  let unanswered = 0;
  const server = createServer((client) => {
    sockets.push(client);
    const kept: Buffer[] = [];
    const keptBack: Buffer[] = [];
    let upstream: Socket | undefined;
    client.on('data', (chunk: Buffer) => {
      if (state.cut) unanswered += chunk.length;
      if (upstream !== undefined && !state.cut) upstream.write(chunk);
      else kept.push(chunk);
    });
    const pass = () => {
      if (upstream === undefined) {
        connect();
        return;
      }
      for (const chunk of kept.splice(0)) upstream.write(chunk);
      for (const chunk of keptBack.splice(0)) client.write(chunk);
    };
    const connect = () => {
      const socket = new Socket();
      upstream = socket;
      sockets.push(socket);
      socket.connect(Number(targetPort), hostname);
      for (const chunk of kept.splice(0)) socket.write(chunk);
      socket.on('data', (chunk: Buffer) => {
        if (state.cut) keptBack.push(chunk);
        else client.write(chunk);
      });
      socket.on('error', () => client.destroy());
      socket.on('close', () => client.destroy());
      client.on('close', () => socket.destroy());
    };
    client.on('error', () => upstream?.destroy());
    released.push(pass);
    if (!state.cut) connect();
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
    /** Bytes the client sent since the cut. */
    unanswered: () => unanswered,
    cut() {
      state.cut = true;
    },
    drop() {
      for (const socket of sockets.splice(0)) socket.destroy();
    },
    release() {
      state.cut = false;
      for (const pass of released) pass();
    },
  };
}

/** A memory broker behind a server. */
export async function memoryServer(cleanups: Cleanups) {
  const inner = await open('memory:');
  cleanups.push(() => inner.close());
  const app = await createApp({
    broker: inner,
    receiptSecret: 'worker-suite-secret-of-32-characters',
  });
  cleanups.push(() => app.close());
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { inner, url };
}
