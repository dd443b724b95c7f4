import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;

beforeEach(async () => {
  server = await startTestServer();
});

afterEach(async () => {
  await server.close();
});

describe('R27 pause and resume over HTTP', () => {
  it('PATCH paused: receives answer nothing, publishes go on; stats and /metrics show it; resume wakes a long poll', async () => {
    await call(server.baseUrl, 'PUT', '/v1/queues/work', { body: {} });
    const paused = await call(server.baseUrl, 'PATCH', '/v1/queues/work', {
      body: { paused: true },
    });
    expect(paused.body.options).toMatchObject({ paused: true });
    const published = await call(server.baseUrl, 'POST', '/v1/queues/work/jobs', {
      body: { id: 'a' },
    });
    expect(published.body).toEqual({ id: 'a', duplicate: false });
    const none = await call(server.baseUrl, 'POST', '/v1/queues/work/receive', { body: {} });
    expect(none.body.deliveries).toEqual([]);
    const stats = await call(server.baseUrl, 'GET', '/v1/queues/work/stats');
    expect(stats.body).toMatchObject({ paused: true, ready: 1 });
    const metrics = await fetch(`${server.baseUrl}/metrics`).then((answer) => answer.text());
    expect(metrics).toMatch(/^leaseq_queue_paused\{queue="work"\} 1$/m);

    const waiting = call(server.baseUrl, 'POST', '/v1/queues/work/receive', {
      body: { wait: 10_000 },
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    const resumed = await call(server.baseUrl, 'PATCH', '/v1/queues/work', {
      body: { paused: false },
    });
    expect(resumed.body.options).not.toHaveProperty('paused');
    const { body } = await waiting;
    expect(body.deliveries.map((d: { id: string }) => d.id)).toEqual(['a']);
    expect(Date.now() - started).toBeLessThan(5_000);
    const after = await fetch(`${server.baseUrl}/metrics`).then((answer) => answer.text());
    expect(after).toMatch(/^leaseq_queue_paused\{queue="work"\} 0$/m);
  });
});
