import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { call, captureLogs, startTestServer } from '../server/helpers.js';
import { writeTextFrameSlowly } from './frames.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the stream heartbeat', () => {
  it('hears the bytes of a frame that comes slowly, and does not end the connection of a client sending it', async () => {
    const { lines, logger } = captureLogs('warn');
    const server = await startTestServer({ logger, limits: { streamHeartbeatMs: 500 } });
    cleanups.push(() => server.close());
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    // A client that answers no ping: its pong would wait behind the frame it is sending anyway.
    const socket = new WebSocket(`${server.baseUrl.replace(/^http/, 'ws')}/v1/stream`, {
      autoPong: false,
    });
    cleanups.push(() => socket.terminate());
    const frames: { type: string; id?: number; results?: { ok: boolean }[] }[] = [];
    socket.on('message', (data) => frames.push(JSON.parse(String(data))));
    let closed: number | undefined;
    socket.on('close', (code) => {
      closed = code;
    });
    await new Promise((resolve) => socket.once('message', resolve));

    // A batch frame written by hand in 100 parts 25 ms apart (2.5 s, five heartbeat intervals),
    // masked as a client's frame is.
    const text = Buffer.from(
      JSON.stringify({
        type: 'batch',
        id: 1,
        queue: 'jobs',
        operations: [{ type: 'publish', jobs: [{ id: 'big', payload: 'x'.repeat(100_000) }] }],
      }),
    );
    const writer = writeTextFrameSlowly(socket, text, true);
    cleanups.push(() => clearInterval(writer));

    const answered = () => frames.some((frame) => frame.id === 1);
    for (const until = Date.now() + 20_000; !answered() && closed === undefined; ) {
      if (Date.now() > until) throw new Error('neither answered nor closed within 20 s');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(closed).toBeUndefined();
    expect(frames.find((frame) => frame.id === 1)).toMatchObject({
      type: 'results',
      results: [{ ok: true }],
    });
    expect(lines.map((line) => line.msg)).not.toContain(
      'stream closed: no pong within the heartbeat',
    );
  });
});
