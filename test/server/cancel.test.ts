import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;

beforeEach(async () => {
  server = await startTestServer();
});

afterEach(async () => {
  await server.close();
});

describe('R28 cancel over HTTP', () => {
  it('POST …/jobs/{id}/cancel ends the delivery; its receipt is refused; the batch route carries cancel', async () => {
    await call(server.baseUrl, 'PUT', '/v1/queues/long', { body: {} });
    await call(server.baseUrl, 'POST', '/v1/queues/long/jobs/batch', {
      body: { jobs: [{ id: 'a' }, { id: 'b' }] },
    });
    const received = await call(server.baseUrl, 'POST', '/v1/queues/long/receive', { body: {} });
    const { receipt } = received.body.deliveries[0];
    const cancelled = await call(server.baseUrl, 'POST', '/v1/queues/long/jobs/a/cancel', {
      body: {},
    });
    expect(cancelled.body).toEqual({ cancelled: true });
    const extend = await call(server.baseUrl, 'POST', '/v1/queues/long/extend', {
      body: { receipt, visibility: 1000 },
    });
    expect(extend.body).toEqual({ deadline: null });
    const ack = await call(server.baseUrl, 'POST', '/v1/queues/long/ack', { body: { receipt } });
    expect(ack.body).toMatchObject({ acked: false });
    const job = await call(server.baseUrl, 'GET', '/v1/queues/long/jobs/a');
    expect(job.body).toMatchObject({
      state: 'dead',
      reason: 'cancelled',
      history: [{ outcome: 'cancelled' }],
    });
    const batch = await call(server.baseUrl, 'POST', '/v1/queues/long/operations', {
      body: {
        operations: [
          { type: 'cancel', id: 'b', remove: true },
          { type: 'cancel', id: 'b' },
          { type: 'cancel', id: '' },
        ],
      },
    });
    expect(batch.body.results).toMatchObject([
      { ok: true, value: true },
      { ok: true, value: false },
      { ok: false, error: { code: 'INVALID_ARGUMENT' } },
    ]);
    const again = await call(server.baseUrl, 'POST', '/v1/queues/long/jobs/b/cancel', {
      body: { remove: 'yes' },
    });
    expect(again.status).toBe(400);
  });
});
