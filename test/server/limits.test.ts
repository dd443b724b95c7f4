import { request } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { open } from '../../src/index.js';
import { createApp, DEFAULT_LIMITS } from '../../src/server/index.js';
import { FrameClient } from '../stream/frames.js';
import { call, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;
const api = (method: string, path: string, body?: unknown) =>
  call(server.baseUrl, method, path, body === undefined ? {} : { body });

beforeAll(async () => {
  server = await startTestServer({
    limits: { maxPayloadBytes: 1024, maxBodyBytes: 4096, maxBatch: 3, maxLongPolls: 2 },
  });
  await api('PUT', '/v1/queues/q', {});
});

afterAll(async () => {
  await server.close();
});

async function ready(): Promise<string[]> {
  return (await (await server.broker.queue('q')).inspect()).ready;
}

describe('payload and body size', () => {
  it('accepts a payload of exactly maxPayloadBytes of JSON and refuses one byte more (413)', async () => {
    const atLimit = 'a'.repeat(1022); // 1022 characters + 2 quotes = 1024 bytes
    expect((await api('POST', '/v1/queues/q/jobs', { id: 'at', payload: atLimit })).status).toBe(
      200,
    );
    const over = await api('POST', '/v1/queues/q/jobs', { id: 'over', payload: `${atLimit}a` });
    expect(over.status).toBe(413);
    expect(over.body.error).toEqual({
      code: 'PAYLOAD_TOO_LARGE',
      message: 'payload is 1025 bytes of JSON; the limit is 1024',
    });
    const batch = await api('POST', '/v1/queues/q/jobs/batch', {
      jobs: [{ id: 'fine' }, { id: 'big', payload: `${atLimit}a` }],
    });
    expect(batch.status).toBe(413);
    expect(batch.body.error.message).toContain('jobs[1].payload');
    expect(await ready()).toEqual(['at']);
  });

  it('refuses a publish operation over maxPayloadBytes in its own outcome, naming the job', async () => {
    await api('PUT', '/v1/queues/ops', {});
    const big = 'a'.repeat(1023); // 1025 bytes of JSON
    const answer = await api('POST', '/v1/queues/ops/operations', {
      operations: [
        { type: 'publish', jobs: [{ id: 'small' }] },
        { type: 'publish', jobs: [{ id: 'fine' }, { id: 'big', payload: big }] },
      ],
    });
    expect(answer.status).toBe(200);
    expect(answer.body.results[0].ok).toBe(true);
    expect(answer.body.results[1]).toEqual({
      ok: false,
      error: {
        code: 'PAYLOAD_TOO_LARGE',
        message: 'operations[1].jobs[1].payload is 1025 bytes of JSON; the limit is 1024',
      },
    });
    expect((await (await server.broker.queue('ops')).inspect()).ready).toEqual(['small']);
  });

  it('refuses a schedule whose payload is over maxPayloadBytes: each occurrence would publish it', async () => {
    await api('PUT', '/v1/queues/timed', {});
    const over = await api('PUT', '/v1/queues/timed/schedules/big', {
      every: 1000,
      payload: 'a'.repeat(1023),
    });
    expect(over.status).toBe(413);
    expect(over.body.error).toEqual({
      code: 'PAYLOAD_TOO_LARGE',
      message: 'payload is 1025 bytes of JSON; the limit is 1024',
    });
    expect(await (await server.broker.queue('timed')).schedules()).toEqual([]);
    const at = await api('PUT', '/v1/queues/timed/schedules/big', {
      every: 1000,
      payload: 'a'.repeat(1022),
    });
    expect(at.status).toBe(200);
  });

  it('counts payload bytes in UTF-8', async () => {
    const euro = '€'.repeat(341); // 3 bytes each: 1023 + 2 quotes = 1025
    expect((await api('POST', '/v1/queues/q/jobs', { id: 'euro', payload: euro })).status).toBe(
      413,
    );
  });

  it('refuses a body over maxBodyBytes with 413 before parsing it', async () => {
    const answer = await call(server.baseUrl, 'POST', '/v1/queues/q/jobs', {
      raw: `{"payload":"${'x'.repeat(5000)}"}`,
    });
    expect(answer.status).toBe(413);
    expect(answer.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('refuses a Content-Length of 100 MB at once, without waiting for the body', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${server.baseUrl}/v1/queues/q/jobs`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(100 * 1024 * 1024),
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', reject);
      req.write('{"id":');
    });
    expect(status).toBe(413);
  });
});

describe('batches', () => {
  it('accepts exactly maxBatch entries and refuses one more, publishing nothing', async () => {
    await api('PUT', '/v1/queues/b', {});
    const three = await api('POST', '/v1/queues/b/jobs/batch', {
      jobs: [{ id: '1' }, { id: '2' }, { id: '3' }],
    });
    expect(three.status).toBe(200);
    const four = await api('POST', '/v1/queues/b/jobs/batch', {
      jobs: [{ id: '4' }, { id: '5' }, { id: '6' }, { id: '7' }],
    });
    expect(four.status).toBe(400);
    expect(four.body.error.message).toBe(
      "body.jobs must NOT have more than 3 items (this server's maxBatch)",
    );
    const receive = await api('POST', '/v1/queues/b/receive', { max: 4 });
    expect(receive.status).toBe(400);
    expect(receive.body.error.message).toBe("body.max must be <= 3 (this server's maxBatch)");
    const reserve = await api('POST', '/v1/queues/b/operations', {
      operations: [{ type: 'reserve', max: 4 }],
    });
    expect(reserve.body.results[0].error.message).toBe(
      "max must be at most 3, got 4 (this server's maxBatch)",
    );
    expect((await (await server.broker.queue('b')).inspect()).ready).toEqual(['1', '2', '3']);
  });
});

describe("maxVisibilityMs and a queue's own lease", () => {
  it('refuses to create a queue whose default lease is above it, and any receive of a longer lease', async () => {
    const short = await startTestServer({ limits: { maxVisibilityMs: 1000 } });
    const at = (method: string, path: string, body?: unknown) =>
      call(short.baseUrl, method, path, body === undefined ? {} : { body });
    try {
      const unnamed = await at('PUT', '/v1/queues/plain', {});
      expect(unnamed.status).toBe(400);
      expect(unnamed.body.error).toEqual({
        code: 'INVALID_ARGUMENT',
        message:
          "visibility: a queue created without one gets the default of 30000 ms, above this server's maxVisibilityMs of 1000; give the queue a visibility of at most 1000",
      });
      const longer = await at('PUT', '/v1/queues/plain', { visibility: 5000 });
      expect(longer.status).toBe(400);
      expect(longer.body.error.message).toBe(
        "body.visibility must be <= 1000 (this server's maxVisibilityMs)",
      );
      expect((await short.broker.listQueues()).map((info) => info.name)).toEqual([]);
      expect((await at('PUT', '/v1/queues/plain', { visibility: 1000 })).status).toBe(201);

      // A queue made elsewhere with a longer lease: opened as it is, but no receive gets it.
      await (await short.broker.queue('long', { visibility: 30_000 })).publish({ id: 'j' });
      expect((await at('PUT', '/v1/queues/long', {})).status).toBe(200);
      const receive = await at('POST', '/v1/queues/long/receive', {});
      expect(receive.status).toBe(400);
      expect(receive.body.error.message).toBe(
        "visibility: queue long leases for 30000 ms when a receive names no visibility, above this server's maxVisibilityMs of 1000; name a visibility of at most 1000, or lower the queue's",
      );
      const operations = await at('POST', '/v1/queues/long/operations', {
        operations: [{ type: 'reserve' }, { type: 'stats' }],
      });
      expect(operations.body.results[0]).toMatchObject({
        ok: false,
        error: { code: 'INVALID_ARGUMENT', message: receive.body.error.message },
      });
      expect(operations.body.results[1]).toMatchObject({ ok: true, value: { active: 0 } });
      const client = await FrameClient.open(short.baseUrl);
      try {
        expect(
          await client.request({ type: 'subscribe', id: 1, queue: 'long', prefetch: 1 }),
        ).toMatchObject({ type: 'error', error: { message: receive.body.error.message } });
      } finally {
        await client.close();
      }
      expect((await (await short.broker.queue('long')).stats()).active).toBe(0);
      // Naming a lease within the limit works as ever.
      const named = await at('POST', '/v1/queues/long/receive', { visibility: 1000 });
      expect(named.body.deliveries.map((d: { id: string }) => d.id)).toEqual(['j']);
    } finally {
      await short.close();
    }
  });

  it('R22 lets a receive at most once take a job of a queue whose lease is above it: no lease applies', async () => {
    const short = await startTestServer({ limits: { maxVisibilityMs: 1000 } });
    const at = (method: string, path: string, body?: unknown) =>
      call(short.baseUrl, method, path, body === undefined ? {} : { body });
    try {
      const queue = await short.broker.queue('long', { visibility: 30_000 });
      await queue.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      const receive = await at('POST', '/v1/queues/long/receive', { ack: 'auto' });
      expect(receive.status).toBe(200);
      expect(receive.body.deliveries.map((d: { id: string }) => d.id)).toEqual(['a']);
      const operations = await at('POST', '/v1/queues/long/operations', {
        operations: [{ type: 'reserve', ack: 'auto' }, { type: 'reserve' }],
      });
      expect(operations.body.results[0]).toMatchObject({ ok: true, value: [{ id: 'b' }] });
      // A manual reserve still takes the queue's lease, held to the limit.
      expect(operations.body.results[1]).toMatchObject({
        ok: false,
        error: { code: 'INVALID_ARGUMENT' },
      });
      expect(await queue.stats()).toMatchObject({ ready: 1, active: 0, autoAcked: 2 });
    } finally {
      await short.close();
    }
  });
});

describe('long polls', () => {
  it('refuses one more waiting receive than maxLongPolls with 429, and frees places when answered', async () => {
    await api('PUT', '/v1/queues/lp', {});
    const first = api('POST', '/v1/queues/lp/receive', { wait: 5000 });
    const second = api('POST', '/v1/queues/lp/receive', { wait: 5000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const third = await api('POST', '/v1/queues/lp/receive', { wait: 5000 });
    expect(third.status).toBe(429);
    expect(third.body.error.code).toBe('TOO_MANY_REQUESTS');
    // A receive that does not wait is never refused.
    expect((await api('POST', '/v1/queues/lp/receive', {})).status).toBe(200);
    await api('POST', '/v1/queues/lp/jobs/batch', { jobs: [{ id: 'a' }, { id: 'b' }] });
    const answers = await Promise.all([first, second]);
    expect(
      answers.flatMap((a) => a.body.deliveries.map((d: { id: string }) => d.id)).sort(),
    ).toEqual(['a', 'b']);
    const again = await api('POST', '/v1/queues/lp/receive', { wait: 10 });
    expect(again.status).toBe(200);
  });

  it('gives a place back when its client goes away, and returns any job it had taken', async () => {
    await api('PUT', '/v1/queues/gone', {});
    const controllers = [new AbortController(), new AbortController()];
    const polls = controllers.map((controller) =>
      fetch(`${server.baseUrl}/v1/queues/gone/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ wait: 10_000 }),
        signal: controller.signal,
      }).catch(() => undefined),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (const controller of controllers) controller.abort();
    await Promise.all(polls);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const both = await Promise.all([
      api('POST', '/v1/queues/gone/receive', { wait: 400 }),
      api('POST', '/v1/queues/gone/receive', { wait: 400 }),
      api('POST', '/v1/queues/gone/jobs', { id: 'j' }),
    ]);
    expect(both.slice(0, 2).map((a) => a.status)).toEqual([200, 200]);
    const ids = both.slice(0, 2).flatMap((a) => a.body.deliveries.map((d: { id: string }) => d.id));
    expect(ids).toEqual(['j']);
  });
});

describe('slow clients', () => {
  it('gives a client 10 s to send its headers by default (headersTimeoutMs)', async () => {
    expect(DEFAULT_LIMITS.headersTimeoutMs).toBe(10_000);
    const broker = await open('memory:');
    try {
      const app = await createApp({
        broker,
        receiptSecret: 'test-secret-of-at-least-32-characters',
      });
      expect(app.server.headersTimeout).toBe(10_000);
      await app.close();
    } finally {
      await broker.close();
    }
  });

  it('answers 408 to a request whose headers stall, within about its headersTimeoutMs', async () => {
    const headersTimeoutMs = 1000;
    const slow = await startTestServer({ limits: { headersTimeoutMs } });
    try {
      const { port } = new URL(slow.baseUrl);
      const started = Date.now();
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1', () => {
          socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
        });
        let text = '';
        socket.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
      });
      const waited = Date.now() - started;
      expect(answer).toMatch(/^HTTP\/1\.1 408/);
      expect(waited).toBeGreaterThanOrEqual(headersTimeoutMs - 100);
      expect(waited).toBeLessThan(headersTimeoutMs + 3_000);
    } finally {
      await slow.close();
    }
  });
});
