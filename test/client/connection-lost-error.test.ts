import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionLostError, RemoteBroker } from '../../src/client/index.js';
import { fakeStreamServer, READY_FRAME } from './fake-stream-server.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A WebSocket server on 127.0.0.1 that starts the stream (its ready frame) and closes the
 * connection when the first frame comes in: a call in flight when the connection drops.
 */
function closingServer(): Promise<string> {
  return fakeStreamServer((socket) => {
    socket.send(READY_FRAME);
    socket.once('message', () => socket.close());
  }, cleanups);
}

describe('ConnectionLostError messages', () => {
  it('the default message holds for an HTTP request as for the stream', () => {
    const error = new ConnectionLostError();
    expect(error.message).not.toMatch(/stream/);
    expect(error.message).toBe(
      'the connection to the server was lost: the call may or may not have taken effect',
    );
    expect(error).toMatchObject({ code: 'CONNECTION_LOST', retryable: true });
  });

  it('a dropped stream connection fails the call with a message naming the stream', async () => {
    const url = await closingServer();
    const broker = new RemoteBroker(url, { transport: 'stream', timeoutMs: 5000 });
    cleanups.push(() => broker.close());
    const error = await broker
      .handle('orders')
      .stats()
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(error).toBeInstanceOf(ConnectionLostError);
    expect((error as Error).message).toBe('the stream connection to the server was lost');
  }, 10_000);
});
