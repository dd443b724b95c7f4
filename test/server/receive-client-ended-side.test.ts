import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startHeldServer } from './held-receives.js';

/**
 * A long poll whose client ends its side of the connection (a half close, as a leaseq client
 * ends a long poll's wait) just as the server's reservation for it completes. Node ends the
 * connection at once on that end; the request's close comes a turn or two later. The server
 * must take the client for gone from the end on: an answer written in between reaches nobody,
 * and its jobs would stay leased until their deadline instead of going back unworked (R33).
 *
 * Made certain by a server whose long poll is answered by the test from the connection's own
 * `end` event: after Node ended the connection, before its close.
 */

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('POST /v1/queues/{name}/receive with wait, whose client ends its side as the jobs are reserved', () => {
  it('gives the jobs back unworked, not answered into the ended connection', async () => {
    const target = await startHeldServer();
    cleanups.push(() => target.close());
    const jobs = await target.storage.queue('jobs', { visibility: 60_000 });
    await jobs.publish({ id: 'a' });
    // The server's end of the connection, whose `end` listeners run after Node's own.
    const accepted = new Promise<Socket>((resolve) =>
      target.server.once('connection', (connection: Socket) => resolve(connection)),
    );
    const { port } = new URL(target.baseUrl);
    const body = JSON.stringify({ wait: 5000 });
    const socket = connect(Number(port), '127.0.0.1');
    cleanups.push(async () => socket.destroy());
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk;
    });
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(
      `POST /v1/queues/jobs/receive HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    const poll = await target.held();
    const reserved = await jobs.receive(poll.reserve);
    expect(reserved.map((delivery) => delivery.id)).toEqual(['a']);
    // The reservation completes as the server reads the client's end of the connection.
    (await accepted).once('end', () => poll.answer(reserved));
    socket.end();
    await ended;
    expect(received).not.toContain('"deliveries"');
    await expect.poll(async () => (await jobs.stats()).unworked).toBe(1);
    expect(await jobs.stats()).toMatchObject({ ready: 1, active: 0, unworked: 1 });
    expect(await jobs.job('a')).toMatchObject({ state: 'ready', deliveryCount: 0 });
  });
});
