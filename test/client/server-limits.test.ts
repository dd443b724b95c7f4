import { afterEach, describe, expect, it } from 'vitest';
import { openRemote, type RemoteBroker, RemoteError } from '../../src/client/index.js';
import { work } from '../../src/index.js';
import type { Logger } from '../../src/worker/logger.js';
import { call, startTestServer, type TestServer } from '../server/helpers.js';

let server: TestServer | undefined;
let client: RemoteBroker | undefined;

afterEach(async () => {
  await client?.close();
  await server?.close();
  client = undefined;
  server = undefined;
});

const FRAME = 64 * 1024;

describe('the stream client keeps its batch frames within maxFrameBytes', () => {
  it('splits the calls of one tick into frames that fit; a subscription goes on', async () => {
    server = await startTestServer({ limits: { maxBodyBytes: FRAME, maxPayloadBytes: FRAME } });
    client = await openRemote(server.baseUrl, { transport: 'stream' });
    const other = await client.queue('other');
    const waiting = other.receive({ wait: 5000 });
    const q = await client.queue('big');
    const results = await Promise.allSettled(
      [...Array(30)].map((_, i) => q.publish({ id: `j${i}`, payload: 'p'.repeat(5000) })),
    );
    expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
    expect(await q.stats()).toMatchObject({ ready: 30 });
    // The subscription of the waiting receive was not lost with the connection.
    await other.publish({ id: 'after' });
    expect((await waiting).map((delivery) => delivery.id)).toEqual(['after']);
  });

  it('refuses an operation too large for any frame alone, as HTTP does (PAYLOAD_TOO_LARGE)', async () => {
    server = await startTestServer({ limits: { maxBodyBytes: FRAME, maxPayloadBytes: FRAME } });
    const jobs = [...Array(30)].map((_, i) => ({ id: `j${i}`, payload: 'p'.repeat(5000) }));
    const overHttp = await openRemote(server.baseUrl, { transport: 'http' });
    const httpError = await (await overHttp.queue('big')).publishBatch(jobs).catch((e) => e);
    await overHttp.close();
    expect(httpError).toBeInstanceOf(RemoteError);
    expect(httpError).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', status: 413 });

    client = await openRemote(server.baseUrl, { transport: 'stream' });
    const other = await client.queue('other');
    const waiting = other.receive({ wait: 5000 });
    const q = await client.queue('big');
    const [batch, single, small] = await Promise.allSettled([
      q.publishBatch(jobs),
      q.publish({ id: 'huge', payload: 'p'.repeat(FRAME) }),
      q.publish({ id: 'small' }),
    ]);
    for (const result of [batch, single]) {
      expect(result.status).toBe('rejected');
      const error = (result as PromiseRejectedResult).reason;
      expect(error).toBeInstanceOf(RemoteError);
      expect(error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', status: 413 });
      expect(error.retryable).not.toBe(true);
    }
    expect(small).toEqual({ status: 'fulfilled', value: { id: 'small', duplicate: false } });
    expect((await q.inspect()).ready).toEqual(['small']);
    await other.publish({ id: 'after' });
    expect((await waiting).map((delivery) => delivery.id)).toEqual(['after']);
  });
});

describe('the stream client sends nothing before it knows the server’s limits', () => {
  it('splits the first tick’s operations by the server’s maxBatch, not its own default', async () => {
    server = await startTestServer({ limits: { maxBatch: 10 } });
    client = await openRemote(server.baseUrl, { transport: 'stream' });
    const q = client.handle('first');
    await server.broker.queue('first');
    const results = await Promise.allSettled(
      [...Array(20)].map((_, i) => q.publish({ id: `j${i}` })),
    );
    expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
    expect(await q.stats()).toMatchObject({ ready: 20 });
  });

  it('serves a first receive whose max is over maxPrefetch with at most maxPrefetch (R6)', async () => {
    server = await startTestServer({ limits: { maxPrefetch: 10 } });
    await (await server.broker.queue('first')).publishBatch(
      [...Array(30)].map((_, i) => ({ id: `j${i}` })),
    );
    client = await openRemote(server.baseUrl, { transport: 'stream' });
    const q = client.handle('first');
    const first = await q.receive({ max: 50, wait: 500 });
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThanOrEqual(10);
    await q.ackMany(first.map((delivery) => delivery.token));
    const next = await q.receive({ max: 50, wait: 500 });
    expect(next.length).toBeGreaterThan(0);
    expect(next.length).toBeLessThanOrEqual(10);
  });
});

describe('the HTTP client shapes its requests by the server’s limits (GET /v1/limits)', () => {
  it('answers the limits to any valid key', async () => {
    server = await startTestServer({ limits: { maxBatch: 3, maxWaitMs: 1000 } });
    const answer = await call(server.baseUrl, 'GET', '/v1/limits');
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ maxBatch: 3, maxWaitMs: 1000, maxBodyBytes: 1024 * 1024 });
  });

  it('splits a long wait into long polls the server accepts', async () => {
    server = await startTestServer({ limits: { maxWaitMs: 300 } });
    client = await openRemote(server.baseUrl, { transport: 'http' });
    const q = await client.queue('polls');
    const waiting = q.receive({ wait: 3000 });
    await new Promise((resolve) => setTimeout(resolve, 700));
    await q.publish({ id: 'late' });
    expect((await waiting).map((delivery) => delivery.id)).toEqual(['late']);
  });

  it('runs a worker with default options against small maxWaitMs and maxBatch', async () => {
    server = await startTestServer({ limits: { maxWaitMs: 300, maxBatch: 3 } });
    client = await openRemote(server.baseUrl, { transport: 'http' });
    const q = await client.queue('work');
    const problems: string[] = [];
    const logger: Logger = {
      info() {},
      warn: (_fields, message) => problems.push(message),
      error: (fields, message) => problems.push(`${message} ${JSON.stringify(fields)}`),
    };
    const done = new Set<string>();
    const worker = await work(q, async (job) => void done.add(job.id), { concurrency: 8, logger });
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      await Promise.all([...Array(10)].map((_, i) => q.publish({ id: `j${i}` })));
      const until = Date.now() + 5000;
      while (done.size < 10 && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await worker.close();
    }
    expect(problems).toEqual([]);
    expect(done.size).toBe(10);
  });

  it('splits the calls of one tick into bodies within maxBodyBytes; one too large fails alone', async () => {
    server = await startTestServer({ limits: { maxBodyBytes: FRAME, maxPayloadBytes: FRAME } });
    client = await openRemote(server.baseUrl, { transport: 'http' });
    const q = await client.queue('big');
    const results = await Promise.allSettled(
      [...Array(30)].map((_, i) => q.publish({ id: `j${i}`, payload: 'p'.repeat(5000) })),
    );
    expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
    const [huge, small] = await Promise.allSettled([
      q.publish({ id: 'huge', payload: 'p'.repeat(FRAME) }),
      q.publish({ id: 'small' }),
    ]);
    expect(huge).toMatchObject({
      status: 'rejected',
      reason: { code: 'PAYLOAD_TOO_LARGE', status: 413 },
    });
    expect(small).toEqual({ status: 'fulfilled', value: { id: 'small', duplicate: false } });
    expect(await q.stats()).toMatchObject({ ready: 31 });
  });
});
