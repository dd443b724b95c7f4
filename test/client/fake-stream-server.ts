import { type WebSocket, WebSocketServer } from 'ws';

/** What a fake server's ready frame names as its limits. */
export const READY_LIMITS = {
  maxFrameBytes: 1024 * 1024,
  maxBatch: 100,
  maxPrefetch: 1000,
  maxSubscriptions: 64,
  heartbeatMs: 15_000,
};

/** The ready frame that starts a stream. */
export const READY_FRAME = JSON.stringify({ type: 'ready', version: '1', limits: READY_LIMITS });

/**
 * A WebSocket server on 127.0.0.1 that does what `onConnection` says with each connection (a
 * leaseq server misbehaving); `cleanups` gets what ends it. Answers its http:// URL.
 */
export async function fakeStreamServer(
  onConnection: (socket: WebSocket) => void,
  cleanups: (() => Promise<unknown> | unknown)[],
): Promise<string> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  server.on('connection', onConnection);
  await new Promise<void>((resolve) => server.once('listening', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as { port: number };
  return `http://127.0.0.1:${port}`;
}
