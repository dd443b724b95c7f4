import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessControl } from '../../src/server/auth.js';
import { loadConfig } from '../../src/server/index.js';
import { FrameClient } from '../stream/frames.js';
import { call, startTestServer, type TestServer } from './helpers.js';

const ADMIN = 'admin-key-0123456789';
const PRODUCER = 'producer-key-0123456789';
const CONSUMER = 'consumer-key-0123456789';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const KEYS = [
  { name: 'admin', key: ADMIN, allow: [{ queues: '*', actions: ['admin' as const] }] },
  {
    name: 'producer',
    sha256: sha256(PRODUCER),
    allow: [{ queues: 'orders-*', actions: ['publish' as const] }],
  },
  {
    name: 'consumer',
    key: CONSUMER,
    allow: [{ queues: 'orders-*', actions: ['consume' as const] }],
  },
];

let server: TestServer;
const as = (apiKey: string | undefined, method: string, path: string, body?: unknown) =>
  call(server.baseUrl, method, path, {
    ...(body === undefined ? {} : { body }),
    ...(apiKey === undefined ? {} : { apiKey }),
  });

beforeAll(async () => {
  server = await startTestServer({ keys: KEYS });
  await as(ADMIN, 'PUT', '/v1/queues/orders-eu', {});
  await as(ADMIN, 'PUT', '/v1/queues/payments', {});
});

afterAll(async () => {
  await server.close();
});

describe('API keys', () => {
  it('refuses a request without a key, with a malformed header or an unknown key (401)', async () => {
    const said: Record<string, string> = {};
    for (const authorization of [
      undefined,
      'Basic abc',
      'Bearer',
      `Bearer ${ADMIN}x`,
      ADMIN,
      'Bearer bad key with spaces',
    ]) {
      const answer = await call(server.baseUrl, 'GET', '/v1/queues', {
        ...(authorization === undefined ? {} : { headers: { authorization } }),
      });
      expect(answer.status).toBe(401);
      expect(answer.body.error.code).toBe('UNAUTHENTICATED');
      expect(answer.headers.get('www-authenticate')).toBe('Bearer');
      said[String(authorization)] = answer.body.error.message;
    }
    // A key given in the wrong form is told so, not that none was given.
    expect(said.undefined).toBe('an API key is required: Authorization: Bearer <key>');
    expect(said['Bearer bad key with spaces']).toBe(
      'the Authorization header is not "Bearer <key>" (an API key has no spaces)',
    );
    expect(said[`Bearer ${ADMIN}x`]).toBe('the API key is not valid');
  });

  it('accepts the scheme in any case and surrounding whitespace', async () => {
    for (const authorization of [`bearer ${ADMIN}`, `BEARER ${ADMIN}`, `  Bearer   ${ADMIN}  `]) {
      const answer = await call(server.baseUrl, 'GET', '/v1/queues', {
        headers: { authorization },
      });
      expect(answer.status).toBe(200);
    }
  });

  it('checks the action and the queue pattern; admin may do everything', async () => {
    const publish = (key: string, queue: string) => as(key, 'POST', `/v1/queues/${queue}/jobs`, {});
    const receive = (key: string, queue: string) =>
      as(key, 'POST', `/v1/queues/${queue}/receive`, {});
    expect((await publish(PRODUCER, 'orders-eu')).status).toBe(200);
    expect((await publish(CONSUMER, 'orders-eu')).status).toBe(403);
    expect((await publish(PRODUCER, 'payments')).status).toBe(403);
    expect((await receive(CONSUMER, 'orders-eu')).status).toBe(200);
    expect((await receive(PRODUCER, 'orders-eu')).status).toBe(403);
    expect((await receive(ADMIN, 'payments')).status).toBe(200);
    const forbidden = await as(CONSUMER, 'POST', '/v1/queues/orders-eu/dead-letters/purge', {});
    expect(forbidden.body.error).toEqual({
      code: 'FORBIDDEN',
      message: 'this key may not admin on queue orders-eu',
    });
    expect((await as(PRODUCER, 'PUT', '/v1/queues/orders-new', {})).status).toBe(403);
    expect((await as(CONSUMER, 'GET', '/v1/queues/orders-eu/inspect')).status).toBe(403);
  });

  it('answers a forbidden queue the same whether it exists or not', async () => {
    const existing = await as(PRODUCER, 'GET', '/v1/queues/payments');
    const missing = await as(PRODUCER, 'GET', '/v1/queues/nowhere');
    expect(existing.status).toBe(403);
    expect(missing.status).toBe(403);
    expect(existing.body.error.code).toBe(missing.body.error.code);
  });

  it('tells a key with no rights on a queue nothing of whether it exists, through every door', async () => {
    const probe = async (queue: string) => {
      const operations = await as(PRODUCER, 'POST', `/v1/queues/${queue}/operations`, {
        operations: [{ type: 'stats' }],
      });
      const receive = await as(PRODUCER, 'POST', `/v1/queues/${queue}/receive`, {});
      const stream = await FrameClient.open(server.baseUrl, PRODUCER);
      try {
        const batch = await stream.request({
          type: 'batch',
          id: 1,
          queue,
          operations: [{ type: 'stats' }],
        });
        const subscribe = await stream.request({ type: 'subscribe', id: 2, queue, prefetch: 1 });
        return {
          operations: [operations.status, operations.body.error?.code],
          receive: [receive.status, receive.body.error?.code],
          batch: [batch.type, batch.error?.code],
          subscribe: [subscribe.type, subscribe.error?.code],
        };
      } finally {
        await stream.close();
      }
    };
    const existing = await probe('payments');
    expect(existing).toEqual({
      operations: [403, 'FORBIDDEN'],
      receive: [403, 'FORBIDDEN'],
      batch: ['error', 'FORBIDDEN'],
      subscribe: ['error', 'FORBIDDEN'],
    });
    expect(await probe('nowhere')).toEqual(existing);
    // A key with some right on the name may learn that it is missing, as GET tells it.
    const own = await as(PRODUCER, 'POST', '/v1/queues/orders-nowhere/operations', {
      operations: [{ type: 'stats' }],
    });
    expect([own.status, own.body.error.code]).toEqual([404, 'NOT_FOUND']);
  });

  it('refuses a batch operation the key may not do with FORBIDDEN before reading its receipt or session handle', async () => {
    const operations = [
      { type: 'ack', receipts: ['bm90LWEtcmVjZWlwdA'] },
      { type: 'nack', receipt: 'bm90LWEtcmVjZWlwdA' },
      { type: 'extend', receipt: 'bm90LWEtcmVjZWlwdA', visibility: 1000 },
      { type: 'heartbeat', session: 'bm90LWEtc2Vzc2lvbg' },
      { type: 'reserve', session: 'bm90LWEtc2Vzc2lvbg' },
    ];
    const codes = (results: { ok: boolean; error?: { code: string } }[]) =>
      results.map((result) => result.error?.code);
    const forbidden = operations.map(() => 'FORBIDDEN');
    const http = await as(PRODUCER, 'POST', '/v1/queues/orders-eu/operations', { operations });
    expect(codes(http.body.results)).toEqual(forbidden);
    const stream = await FrameClient.open(server.baseUrl, PRODUCER);
    try {
      const batch = await stream.request({ type: 'batch', id: 1, queue: 'orders-eu', operations });
      expect(codes(batch.results)).toEqual(forbidden);
    } finally {
      await stream.close();
    }
    // A key with the right is told what is wrong with them.
    const own = await as(CONSUMER, 'POST', '/v1/queues/orders-eu/operations', { operations });
    expect(codes(own.body.results)).toEqual([
      'INVALID_RECEIPT',
      'INVALID_RECEIPT',
      'INVALID_RECEIPT',
      'INVALID_ARGUMENT',
      'INVALID_ARGUMENT',
    ]);
  });

  it('lists only the queues a key can see', async () => {
    const names = async (key: string) =>
      (await as(key, 'GET', '/v1/queues')).body.queues.map((q: { name: string }) => q.name);
    expect(await names(ADMIN)).toEqual(['orders-eu', 'payments']);
    expect(await names(CONSUMER)).toEqual(['orders-eu']);
  });

  it('checks the key before reading the body: a huge body from no one is 401', async () => {
    const answer = await call(server.baseUrl, 'POST', '/v1/queues/orders-eu/jobs', {
      raw: '{"payload":"',
    });
    expect(answer.status).toBe(401);
  });

  it('keeps health, readiness and the OpenAPI document public, and /metrics behind a key', async () => {
    for (const path of ['/healthz', '/readyz', '/openapi.json']) {
      expect((await as(undefined, 'GET', path)).status).toBe(200);
    }
    expect((await as(undefined, 'GET', '/metrics')).status).toBe(401);
    expect((await as(CONSUMER, 'GET', '/metrics')).status).toBe(200);
  });
});

describe('AccessControl', () => {
  it('matches stored SHA-256 digests and plain keys alike', () => {
    const access = new AccessControl(KEYS);
    expect(access.authenticate(`Bearer ${PRODUCER}`).name).toBe('producer');
    expect(access.authenticate(`Bearer ${ADMIN}`).name).toBe('admin');
    expect(access.authenticate(`Bearer ${CONSUMER}`).can('consume', 'orders-x')).toBe(true);
    expect(access.authenticate(`Bearer ${CONSUMER}`).can('consume', 'xorders-x')).toBe(false);
  });

  it('allows everything without keys (loopback only)', () => {
    const access = new AccessControl([]);
    expect(access.enabled).toBe(false);
    expect(access.authenticate(undefined).can('admin', 'anything')).toBe(true);
  });

  it('will not start on a non-loopback host without keys', () => {
    expect(() => loadConfig({ flags: { host: '0.0.0.0' } })).toThrow(
      /host: 0\.0\.0\.0 is not a loopback address and no API keys are configured/,
    );
    expect(loadConfig({ flags: { host: '0.0.0.0', keys: JSON.stringify(KEYS) } }).host).toBe(
      '0.0.0.0',
    );
  });
});
