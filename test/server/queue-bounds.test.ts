import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { call, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;
const clock = new ManualClock(1000);

beforeEach(async () => {
  server = await startTestServer({ clock });
});

afterEach(async () => {
  await server.close();
});

const metrics = () => fetch(`${server.baseUrl}/metrics`).then((answer) => answer.text());

describe('R30 retention and expiresAt over HTTP', () => {
  it('PUT retention, publish with expiresAt: expired jobs are dead, counted in stats and /metrics', async () => {
    const created = await call(server.baseUrl, 'PUT', '/v1/queues/quotes', {
      body: { retention: 500 },
    });
    expect(created.body.options).toMatchObject({ retention: 500 });
    await call(server.baseUrl, 'POST', '/v1/queues/quotes/jobs/batch', {
      body: { jobs: [{ id: 'own', expiresAt: 1200 }, { id: 'aged' }] },
    });
    const job = await call(server.baseUrl, 'GET', '/v1/queues/quotes/jobs/own');
    expect(job.body).toMatchObject({ state: 'ready', expiresAt: 1200, publishedAt: 1000 });
    clock.set(1200);
    const none = await call(server.baseUrl, 'POST', '/v1/queues/quotes/receive', {
      body: { max: 2 },
    });
    expect(none.body.deliveries.map((d: { id: string }) => d.id)).toEqual(['aged']);
    clock.set(1500);
    const stats = await call(server.baseUrl, 'GET', '/v1/queues/quotes/stats');
    expect(stats.body).toMatchObject({ dead: 1, active: 1, expired: 1 });
    expect(stats.body.deadLetters).toEqual({ expired: 1 });
    const text = await metrics();
    expect(text).toMatch(/^leaseq_expired_jobs_total\{queue="quotes"\} 1$/m);
    expect(text).toMatch(/^leaseq_dead_letters_total\{queue="quotes",reason="expired"\} 1$/m);
    const removed = await call(server.baseUrl, 'PATCH', '/v1/queues/quotes', {
      body: { retention: null },
    });
    expect(removed.body.options).not.toHaveProperty('retention');
  });
});

describe('R31 maxLength over HTTP', () => {
  it('a publish beyond maxLength is 409 QUEUE_FULL, in the batch route its own outcome; dead-letter-oldest makes room', async () => {
    await call(server.baseUrl, 'PUT', '/v1/queues/feed', { body: { maxLength: 1 } });
    await call(server.baseUrl, 'POST', '/v1/queues/feed/jobs', { body: { id: 'a' } });
    const full = await call(server.baseUrl, 'POST', '/v1/queues/feed/jobs', { body: { id: 'b' } });
    expect(full.status).toBe(409);
    expect(full.body.error).toMatchObject({ code: 'QUEUE_FULL' });
    const batch = await call(server.baseUrl, 'POST', '/v1/queues/feed/jobs/batch', {
      body: { jobs: [{ id: 'c', delay: 10 }, { id: 'd' }] },
    });
    expect(batch.status).toBe(409);
    const operations = await call(server.baseUrl, 'POST', '/v1/queues/feed/operations', {
      body: {
        operations: [{ type: 'publish', jobs: [{ id: 'e' }] }, { type: 'stats' }],
      },
    });
    expect(operations.body.results[0]).toMatchObject({
      ok: false,
      error: { code: 'QUEUE_FULL' },
    });
    expect(operations.body.results[1]).toMatchObject({ ok: true, value: { ready: 1 } });

    const updated = await call(server.baseUrl, 'PATCH', '/v1/queues/feed', {
      body: { overflow: 'dead-letter-oldest' },
    });
    expect(updated.body.options).toMatchObject({ maxLength: 1, overflow: 'dead-letter-oldest' });
    const taken = await call(server.baseUrl, 'POST', '/v1/queues/feed/jobs', { body: { id: 'b' } });
    expect(taken.body).toEqual({ id: 'b', duplicate: false });
    const dead = await call(server.baseUrl, 'GET', '/v1/queues/feed/dead-letters');
    expect(dead.body.deadLetters).toMatchObject([{ id: 'a', reason: 'maxlen' }]);
    expect(await metrics()).toMatch(
      /^leaseq_dead_letters_total\{queue="feed",reason="maxlen"\} 1$/m,
    );
    const back = await call(server.baseUrl, 'PATCH', '/v1/queues/feed', {
      body: { maxLength: null, overflow: null },
    });
    expect(back.body.options).not.toHaveProperty('maxLength');
    expect(back.body.options).not.toHaveProperty('overflow');
  });
});
