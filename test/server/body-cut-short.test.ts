import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { open } from '../../src/index.js';
import { mapError } from '../../src/server/errors.js';
import { createApp } from '../../src/server/index.js';
import { captureLogs } from './helpers.js';

/**
 * A request whose connection closes before its body arrived whole (its client went away, or the
 * server cut it for not arriving in time) ends in Node's `aborted` error, which Fastify hands on
 * as the body's error. That is the client's doing: it is not an internal failure, so it is not
 * logged as `request failed` at error level, and nothing of the request is applied.
 */

let close: (() => Promise<void>) | undefined;

afterEach(async () => {
  await close?.();
  close = undefined;
});

describe('a request body cut short by its connection closing', () => {
  it('is the client error it is: mapped to INVALID_ARGUMENT, not logged as a failure, nothing published', async () => {
    const { lines, logger } = captureLogs('info');
    const broker = await open('memory:');
    const app = await createApp({
      broker,
      receiptSecret: 'test-secret-of-at-least-32-characters',
      logger,
    });
    let seen: (error: unknown) => void = () => {};
    const errored = new Promise<unknown>((resolve) => {
      seen = resolve;
    });
    app.addHook('onError', async (_request, _reply, error) => {
      seen(error);
    });
    const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    close = () => app.close().finally(() => broker.close());
    await broker.queue('cut');

    const { port } = new URL(baseUrl);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    // Ten bytes announced, two sent, then the connection closes.
    socket.write(
      'POST /v1/queues/cut/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
        'Content-Type: application/json\r\nContent-Length: 10\r\n\r\n{"',
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.destroy();

    const error = await errored;
    expect((error as Error).message).toBe('aborted');
    const mapped = mapError(error);
    expect(mapped.internal).toBe(false);
    expect(mapped.status).toBe(400);
    expect(mapped.body.error.code).toBe('INVALID_ARGUMENT');
    expect(mapped.body.error.message).toBe(
      'the connection closed before the request body arrived whole',
    );
    // The error handler runs right after the onError hooks.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    expect(lines.map((line) => line.msg)).not.toContain('request failed');
    expect((await (await broker.queue('cut')).stats()).published).toBe(0);
  });

  it('leaves other failures internal', () => {
    const mapped = mapError(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    expect(mapped.internal).toBe(true);
    expect(mapped.status).toBe(500);
    expect(mapped.body.error).toEqual({ code: 'INTERNAL', message: 'internal error' });
  });
});
