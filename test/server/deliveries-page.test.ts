import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueName } from '../conformance/engines.js';
import { call, startTestServer, type TestServer } from './helpers.js';
import { serverStorages } from './storages.js';

const storages = await serverStorages();

/** The ids of a page of deliveries. */
const ids = (body: { deliveries: { id: string }[] }) => body.deliveries.map((d) => d.id);

for (const storage of storages) {
  (storage.skipReason === undefined ? describe : describe.skip)(
    `GET /v1/queues/{name}/deliveries?limit=&after= on ${storage.name}`,
    () => {
      let server: TestServer;
      let q: string;
      // biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely
      const api = (method: string, path: string, body?: unknown): Promise<any> =>
        call(`${server.baseUrl}/v1/queues/${q}`, method, path, body === undefined ? {} : { body });
      /** One of them under a session: its handle is in the pages as in the whole list. */
      let session: string;

      /** 150 in flight, j000 … j149 in token order; the first under a session. */
      beforeAll(async () => {
        server = await startTestServer({ url: storage.url });
        q = queueName('deliveries');
        expect((await api('PUT', '', { visibility: 3_600_000 })).status).toBe(201);
        const all = Array.from({ length: 150 }, (_, n) => `j${String(n).padStart(3, '0')}`);
        for (let at = 0; at < all.length; at += 50) {
          await api('POST', '/jobs/batch', { jobs: all.slice(at, at + 50).map((id) => ({ id })) });
        }
        session = (await api('POST', '/sessions', {})).body.session;
        await api('POST', '/receive', { session });
        await api('POST', '/receive', { max: 100 });
        await api('POST', '/receive', { max: 49 });
      });

      afterAll(async () => {
        await api('DELETE', '');
        await server?.close();
      });

      it('answers a page in token order with next, and at most 100 without a limit', async () => {
        const first = await api('GET', '/deliveries?limit=2');
        expect(first.status).toBe(200);
        expect(ids(first.body)).toEqual(['j000', 'j001']);
        expect(first.body.deliveries[0]).toEqual({
          token: 1,
          id: 'j000',
          deliveredAt: expect.any(Number),
          deadline: expect.any(Number),
          deliveryCount: 1,
          session,
        });
        expect(first.body.next).toEqual(expect.any(String));
        const second = await api('GET', `/deliveries?limit=2&after=${first.body.next}`);
        expect(ids(second.body)).toEqual(['j002', 'j003']);
        // Without parameters: the oldest 100 of the 150, and where the next page starts.
        const bounded = await api('GET', '/deliveries');
        expect(bounded.status).toBe(200);
        expect(bounded.body.deliveries).toHaveLength(100);
        expect(ids(bounded.body).at(-1)).toBe('j099');
        const rest = await api('GET', `/deliveries?after=${bounded.body.next}`);
        expect(ids(rest.body)).toHaveLength(50);
        expect(rest.body.next).toBeUndefined();
        // A page of the most there may be holds them all; the count is the stats' active.
        const most = await api('GET', '/deliveries?limit=1000');
        expect(most.body.deliveries).toHaveLength(150);
        expect(most.body).not.toHaveProperty('next');
        expect(most.body.deliveries.slice(0, 100)).toEqual(bounded.body.deliveries);
        expect((await api('GET', '/stats')).body.active).toBe(150);
      });

      it('refuses a bad limit, a bad cursor or another parameter, and changes nothing', async () => {
        const before = await api('GET', '/inspect');
        for (const [query, message] of [
          ['limit=0', 'limit must be an integer from 1 to 1000, got 0'],
          ['limit=1001', 'limit must be an integer from 1 to 1000, got 1001'],
          ['limit=ten', 'querystring.limit must match pattern "^[0-9]{1,16}$"'],
          ['limit=-1', 'querystring.limit must match pattern "^[0-9]{1,16}$"'],
          ['after=x', 'after must be the next of an earlier page, got "x"'],
          ['after=0', 'after must be the next of an earlier page, got "0"'],
          [`after=${'9'.repeat(33)}`, 'querystring.after must NOT have more than 32 characters'],
          ['page=2', 'querystring has an unknown field "page"'],
        ] as const) {
          const refused = await api('GET', `/deliveries?${query}`);
          expect(refused.status, query).toBe(400);
          expect(refused.body.error, query).toEqual({ code: 'INVALID_ARGUMENT', message });
        }
        const after = await api('GET', '/inspect');
        expect({ ...after.body, queueTime: 0 }).toEqual({ ...before.body, queueTime: 0 });
        expect(after.body.queueTime).toBe(before.body.queueTime);
      });
    },
  );
}

describe('the OpenAPI document', () => {
  it('lists the limit and after parameters of GET /v1/queues/{name}/deliveries, and next', async () => {
    const server = await startTestServer();
    try {
      const document = (await call(server.baseUrl, 'GET', '/openapi.json')).body;
      const operation = document.paths['/v1/queues/{name}/deliveries'].get;
      for (const name of ['limit', 'after']) {
        expect(operation.parameters).toContainEqual(
          expect.objectContaining({ name, in: 'query', required: false }),
        );
      }
      const schema = operation.responses['200'].content['application/json'].schema;
      expect(Object.keys(schema.properties)).toEqual(['deliveries', 'next']);
    } finally {
      await server.close();
    }
  });
});
