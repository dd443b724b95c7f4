import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueName } from '../conformance/engines.js';
import { call, startTestServer, type TestServer } from './helpers.js';
import { serverStorages } from './storages.js';

const storages = await serverStorages();

for (const storage of storages) {
  (storage.skipReason === undefined ? describe : describe.skip)(
    `GET /v1/queues/{name}/inspect?limit= on ${storage.name}`,
    () => {
      let server: TestServer;
      let q: string;
      // biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely
      const api = (method: string, path: string, body?: unknown): Promise<any> =>
        call(`${server.baseUrl}/v1/queues/${q}`, method, path, body === undefined ? {} : { body });

      /** Three jobs in each state: ready, delayed, active (one under a session), dead, waiting. */
      beforeAll(async () => {
        server = await startTestServer({ url: storage.url });
        q = queueName('inspect');
        expect((await api('PUT', '', { maxDeliveries: 1 })).status).toBe(201);
        const ids = (prefix: string) => [1, 2, 3].map((n) => ({ id: `${prefix}-${n}` }));
        // The dead first: received and rejected before any other job is ready.
        await api('POST', '/jobs/batch', { jobs: ids('dead') });
        for (const delivery of (await api('POST', '/receive', { max: 3 })).body.deliveries) {
          await api('POST', '/nack', { receipt: delivery.receipt, requeue: false, reason: 'bad' });
        }
        await api('POST', '/jobs/batch', { jobs: ids('active') });
        const session = (await api('POST', '/sessions', {})).body.session;
        await api('POST', '/receive', { session });
        await api('POST', '/receive', { max: 2 });
        await api('POST', '/jobs/batch', { jobs: ids('ready') });
        await api('POST', '/jobs/batch', {
          jobs: ids('delayed').map((job, n) => ({ ...job, delay: 60_000 * (n + 1) })),
        });
        await api('POST', '/jobs/batch', {
          jobs: ['g-1', 'g-2', 'g-3', 'g-4'].map((id) => ({ id, group: 'g' })),
        });
      });

      afterAll(async () => {
        await api('DELETE', '');
        await server?.close();
      });

      it('answers the first `limit` entries of each list, in the order of the whole view', async () => {
        const whole = await api('GET', '/inspect');
        expect(whole.status).toBe(200);
        expect(whole.body.ready).toEqual(['ready-1', 'ready-2', 'ready-3', 'g-1']);
        expect(whole.body.waiting).toEqual(['g-2', 'g-3', 'g-4']);
        expect(whole.body.active).toHaveLength(3);
        expect(whole.body.active[0].session).toEqual(expect.any(String));
        const cut = await api('GET', '/inspect?limit=2');
        expect(cut.status).toBe(200);
        expect(cut.body).toEqual({
          queueTime: expect.any(Number),
          ready: whole.body.ready.slice(0, 2),
          delayed: whole.body.delayed.slice(0, 2),
          // The session handle as the whole view signs it.
          active: whole.body.active.slice(0, 2),
          dead: whole.body.dead.slice(0, 2),
          waiting: whole.body.waiting.slice(0, 2),
        });
        expect(cut.body.dead.map((d: { id: string }) => d.id)).toEqual(['dead-1', 'dead-2']);
        // A limit above every list's length answers the whole view.
        const all = await api('GET', '/inspect?limit=1000');
        expect({ ...all.body, queueTime: 0 }).toEqual({ ...whole.body, queueTime: 0 });
      });

      it('refuses a limit that is not an integer from 1 to 1000, or another parameter', async () => {
        for (const [query, message] of [
          ['limit=0', 'limit must be an integer from 1 to 1000, got 0'],
          ['limit=1001', 'limit must be an integer from 1 to 1000, got 1001'],
          ['limit=ten', 'querystring.limit must match pattern "^[0-9]{1,16}$"'],
          ['limit=-1', 'querystring.limit must match pattern "^[0-9]{1,16}$"'],
          ['max=2', 'querystring has an unknown field "max"'],
        ] as const) {
          const refused = await api('GET', `/inspect?${query}`);
          expect(refused.status, query).toBe(400);
          expect(refused.body.error, query).toEqual({ code: 'INVALID_ARGUMENT', message });
        }
      });
    },
  );
}

describe('the OpenAPI document', () => {
  it('lists the limit parameter of GET /v1/queues/{name}/inspect', async () => {
    const server = await startTestServer();
    try {
      const document = (await call(server.baseUrl, 'GET', '/openapi.json')).body;
      const parameters = document.paths['/v1/queues/{name}/inspect'].get.parameters;
      expect(parameters).toContainEqual(
        expect.objectContaining({ name: 'limit', in: 'query', required: false }),
      );
    } finally {
      await server.close();
    }
  });
});
