import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

// A key with `read` sees queues and their figures and changes nothing: what a monitoring
// scraper is given, its key sitting in plain text in the scraper's configuration.
const ADMIN = 'admin-key-0123456789';
const SCRAPER = 'scraper-key-0123456789';
const ORDERS_ONLY = 'orders-read-key-0123456789';
const KEYS = [
  { name: 'ops', key: ADMIN, allow: [{ queues: '*', actions: ['admin' as const] }] },
  { name: 'scraper', key: SCRAPER, allow: [{ queues: '*', actions: ['read' as const] }] },
  {
    name: 'orders-only',
    key: ORDERS_ONLY,
    allow: [{ queues: 'orders', actions: ['read' as const] }],
  },
];

let server: TestServer;
const as = (key: string, method: string, path: string, body?: unknown) =>
  call(server.baseUrl, method, path, { apiKey: key, ...(body === undefined ? {} : { body }) });

beforeAll(async () => {
  server = await startTestServer({ keys: KEYS });
  for (const name of ['orders', 'payments']) {
    expect((await as(ADMIN, 'PUT', `/v1/queues/${name}`, {})).status).toBe(201);
  }
  expect((await as(ADMIN, 'POST', '/v1/queues/orders/jobs', { id: 'a', payload: 1 })).status).toBe(
    200,
  );
});

afterAll(async () => {
  await server.close();
});

describe('an API key with the read action', () => {
  it('reads the queues, their options and figures, and /metrics', async () => {
    const metrics = await as(SCRAPER, 'GET', '/metrics');
    expect(metrics.status).toBe(200);
    expect(String(metrics.body)).toContain('leaseq_jobs{queue="orders",state="ready"} 1');
    expect(String(metrics.body)).toContain('queue="payments"');
    const stats = await as(SCRAPER, 'GET', '/v1/stats');
    expect(stats.status).toBe(200);
    expect(stats.body).toMatchObject({ total: 2 });
    expect((await as(SCRAPER, 'GET', '/v1/queues/orders/stats')).body).toMatchObject({ ready: 1 });
    expect((await as(SCRAPER, 'GET', '/v1/queues/orders')).status).toBe(200);
    const list = await as(SCRAPER, 'GET', '/v1/queues');
    expect(list.body.queues.map((queue: { name: string }) => queue.name)).toEqual([
      'orders',
      'payments',
    ]);
    expect((await as(SCRAPER, 'GET', '/v1/me')).body.queues).toEqual([
      { name: 'orders', actions: ['read'] },
      { name: 'payments', actions: ['read'] },
    ]);
  });

  it('may not publish, receive, read jobs or administer, and such a call changes nothing', async () => {
    const refused = [
      await as(SCRAPER, 'POST', '/v1/queues/orders/jobs', { id: 'b' }),
      await as(SCRAPER, 'POST', '/v1/queues/orders/receive', { max: 1 }),
      await as(SCRAPER, 'GET', '/v1/queues/orders/jobs/a'),
      await as(SCRAPER, 'GET', '/v1/queues/orders/dead-letters'),
      await as(SCRAPER, 'GET', '/v1/queues/orders/deliveries'),
      await as(SCRAPER, 'PATCH', '/v1/queues/orders', { visibility: 1000 }),
      await as(SCRAPER, 'DELETE', '/v1/queues/orders'),
      await as(SCRAPER, 'PUT', '/v1/queues/made-by-scraper', {}),
    ];
    for (const answer of refused) {
      expect(answer.status).toBe(403);
      expect(answer.body.error.code).toBe('FORBIDDEN');
    }
    const stats = await as(ADMIN, 'GET', '/v1/queues/orders/stats');
    expect(stats.body).toMatchObject({ ready: 1, active: 0, published: 1 });
    expect((await as(ADMIN, 'GET', '/v1/queues/made-by-scraper')).status).toBe(404);
  });

  it('runs the figures of an operations batch and refuses its other operations, each on its own', async () => {
    const batch = await as(SCRAPER, 'POST', '/v1/queues/orders/operations', {
      operations: [{ type: 'stats' }, { type: 'reserve', max: 1 }],
    });
    expect(batch.status).toBe(200);
    expect(batch.body.results[0]).toMatchObject({ ok: true, value: { ready: 1 } });
    expect(batch.body.results[1]).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
  });

  it('sees only the queues its pattern names', async () => {
    expect((await as(ORDERS_ONLY, 'GET', '/v1/queues/payments/stats')).status).toBe(403);
    const metrics = String((await as(ORDERS_ONLY, 'GET', '/metrics')).body);
    expect(metrics).toContain('queue="orders"');
    expect(metrics).not.toContain('queue="payments"');
  });
});
