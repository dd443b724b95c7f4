import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/testing/index.js';
import { call, startTestServer, type TestServer } from './helpers.js';

const ADMIN = 'admin-key-0123456789';
const VIEWER = 'viewer-key-0123456789';
const KEYS = [
  { name: 'ops', key: ADMIN, allow: [{ queues: '*', actions: ['admin' as const] }] },
  {
    name: 'viewer',
    key: VIEWER,
    allow: [
      { queues: 'orders-*', actions: ['consume' as const] },
      { queues: 'orders-eu', actions: ['publish' as const] },
    ],
  },
];

let server: TestServer;
const clock = new ManualClock(1_000);
const as = (key: string, method: string, path: string, body?: unknown) =>
  call(server.baseUrl, method, path, { apiKey: key, ...(body === undefined ? {} : { body }) });

beforeAll(async () => {
  server = await startTestServer({ keys: KEYS, clock });
  for (const name of ['orders-eu', 'orders-us', 'payments']) {
    expect((await as(ADMIN, 'PUT', `/v1/queues/${name}`, { visibility: 5_000 })).status).toBe(201);
  }
  await as(ADMIN, 'POST', '/v1/queues/orders-eu/jobs/batch', {
    jobs: [{ id: 'a', payload: { n: 1 } }, { id: 'b' }, { id: 'c', delay: 60_000 }],
  });
});

afterAll(async () => {
  await server.close();
});

describe('GET /v1/stats', () => {
  it('answers the figures of every visible queue, by name, equal to each queue’s own stats', async () => {
    const all = await as(ADMIN, 'GET', '/v1/stats');
    expect(all.status).toBe(200);
    expect(all.body.queues.map((q: { name: string }) => q.name)).toEqual([
      'orders-eu',
      'orders-us',
      'payments',
    ]);
    for (const { name, stats } of all.body.queues) {
      expect(stats).toEqual((await as(ADMIN, 'GET', `/v1/queues/${name}/stats`)).body);
    }
    expect(all.body.queues[0].stats).toMatchObject({ ready: 2, delayed: 1, published: 3 });
  });

  it('leaves out the queues the key cannot see; needs a key', async () => {
    const seen = await as(VIEWER, 'GET', '/v1/stats');
    expect(seen.body.queues.map((q: { name: string }) => q.name)).toEqual([
      'orders-eu',
      'orders-us',
    ]);
    expect((await call(server.baseUrl, 'GET', '/v1/stats')).status).toBe(401);
  });
});

describe('GET /v1/me', () => {
  it('names the key, its grants and its rights per visible queue', async () => {
    const me = await as(VIEWER, 'GET', '/v1/me');
    expect(me.body).toEqual({
      name: 'viewer',
      keysRequired: true,
      grants: KEYS[1]?.allow,
      queues: [
        { name: 'orders-eu', actions: ['read', 'publish', 'consume'] },
        { name: 'orders-us', actions: ['read', 'consume'] },
      ],
    });
    const admin = await as(ADMIN, 'GET', '/v1/me');
    expect(admin.body.queues).toContainEqual({
      name: 'payments',
      actions: ['read', 'publish', 'consume', 'admin'],
    });
  });

  it('without keys (loopback) answers a principal that may do everything', async () => {
    const open = await startTestServer();
    try {
      const me = await call(open.baseUrl, 'GET', '/v1/me');
      expect(me.body).toEqual({
        name: 'loopback',
        keysRequired: false,
        grants: [{ queues: '*', actions: ['admin'] }],
        queues: [],
      });
    } finally {
      await open.close();
    }
  });
});

describe('in-flight deliveries and publish times', () => {
  it('GET …/deliveries lists live deliveries with delivery time and session handle (admin only)', async () => {
    clock.advance(500);
    const session = (await as(ADMIN, 'POST', '/v1/queues/orders-eu/sessions', {})).body.session;
    const received = await as(ADMIN, 'POST', '/v1/queues/orders-eu/receive', { session });
    const [delivery] = received.body.deliveries;
    const answer = await as(ADMIN, 'GET', '/v1/queues/orders-eu/deliveries');
    expect(answer.body).toEqual({
      deliveries: [
        {
          token: delivery.token,
          id: 'a',
          deliveredAt: 1_500,
          deadline: 6_500,
          deliveryCount: 1,
          session,
        },
      ],
    });
    expect((await as(VIEWER, 'GET', '/v1/queues/orders-eu/deliveries')).status).toBe(403);
    expect((await as(ADMIN, 'GET', '/v1/queues/missing/deliveries')).status).toBe(404);
  });

  it('GET …/jobs/{id} answers the payload and the publish time', async () => {
    const job = await as(VIEWER, 'GET', '/v1/queues/orders-eu/jobs/c');
    expect(job.body).toMatchObject({
      id: 'c',
      state: 'delayed',
      publishedAt: 1_000,
      availableAt: 61_000,
    });
    expect((await as(VIEWER, 'GET', '/v1/queues/orders-eu/jobs/a')).body).toMatchObject({
      payload: { n: 1 },
      publishedAt: 1_000,
    });
  });
});
