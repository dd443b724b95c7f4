import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueName } from '../conformance/engines.js';
import { type Answer, call, startTestServer, type TestServer } from './helpers.js';
import { serverStorages } from './storages.js';

const storages = await serverStorages();

const ADMIN = 'admin-key-0123456789';
const VIEWER = 'viewer-key-0123456789';

for (const storage of storages) {
  (storage.skipReason === undefined ? describe : describe.skip)(
    `GET /v1/stats?contains=&offset=&limit= on ${storage.name}`,
    () => {
      let server: TestServer;
      // Every queue of this file starts with the prefix, and the keys see only those: a storage
      // shared with other tests (PostgreSQL) answers the same.
      const prefix = queueName('stats-page');
      const names = [
        'alpha',
        'Bravo-EU',
        'bravo-us',
        'charlie',
        'delta-eu',
        'echo',
        'foxtrot',
        'golf-EU',
      ].map((suffix) => `${prefix}-${suffix}`);
      const sorted = [...names].sort();
      /** The queues whose figures the broker was asked for, one list per read. */
      const asked: string[][] = [];

      const get = (path: string, key = ADMIN): Promise<Answer> =>
        call(server.baseUrl, 'GET', path, { apiKey: key });
      const shown = (answer: Answer) => answer.body.queues.map((q: { name: string }) => q.name);

      beforeAll(async () => {
        server = await startTestServer({
          url: storage.url,
          keys: [
            { name: 'ops', key: ADMIN, allow: [{ queues: `${prefix}-*`, actions: ['admin'] }] },
            // Sees the four queues whose name has "eu" in any case, and alpha.
            {
              name: 'viewer',
              key: VIEWER,
              allow: [
                { queues: `${prefix}-*-eu`, actions: ['consume'] },
                { queues: `${prefix}-*-EU`, actions: ['consume'] },
                { queues: `${prefix}-alpha`, actions: ['publish'] },
              ],
            },
          ],
        });
        for (const name of names) {
          const made = await call(server.baseUrl, 'PUT', `/v1/queues/${name}`, {
            apiKey: ADMIN,
            body: {},
          });
          expect(made.status, name).toBe(201);
        }
        await call(server.baseUrl, 'POST', `/v1/queues/${prefix}-echo/jobs/batch`, {
          apiKey: ADMIN,
          body: { jobs: [{ id: 'a' }, { id: 'b', delay: 60_000 }] },
        });
        const { broker } = server;
        const read = broker.statsOfQueues?.bind(broker);
        if (read !== undefined) {
          broker.statsOfQueues = (queues) => {
            asked.push([...queues]);
            return read(queues);
          };
        }
      });

      afterAll(async () => {
        for (const name of names) await server?.broker.deleteQueue(name);
        await server?.close();
      });

      it('without parameters answers every visible queue by name, as before, and their total', async () => {
        const all = await get('/v1/stats');
        expect(all.status).toBe(200);
        expect(Object.keys(all.body).sort()).toEqual(['queues', 'total']);
        expect(shown(all)).toEqual(sorted);
        expect(all.body.total).toBe(names.length);
        const echo = all.body.queues.find((q: { name: string }) => q.name === `${prefix}-echo`);
        expect(echo.stats).toMatchObject({ ready: 1, delayed: 1, published: 2 });
        // The queue's own figures, but for the times (read a moment later).
        const own = (await get(`/v1/queues/${prefix}-echo/stats`)).body;
        expect({ ...echo.stats, queueTime: 0, oldestReadyAge: 0 }).toEqual({
          ...own,
          queueTime: 0,
          oldestReadyAge: 0,
        });
      });

      it('answers a page by offset and limit, reading the figures of that page alone', async () => {
        asked.length = 0;
        const page = await get('/v1/stats?offset=2&limit=3');
        expect(page.status).toBe(200);
        expect(shown(page)).toEqual(sorted.slice(2, 5));
        expect(page.body.total).toBe(names.length);
        expect(asked).toEqual([sorted.slice(2, 5)]);
        expect(shown(await get('/v1/stats?limit=2'))).toEqual(sorted.slice(0, 2));
        expect(shown(await get('/v1/stats?offset=6'))).toEqual(sorted.slice(6));
        expect(shown(await get('/v1/stats?offset=7&limit=1000'))).toEqual(sorted.slice(7));
        // Past the end: no queue, and nothing read; the total says where the end is.
        asked.length = 0;
        const beyond = await get('/v1/stats?offset=8&limit=50');
        expect(beyond.body).toEqual({ queues: [], total: names.length });
        expect(asked.flat()).toEqual([]);
      });

      it('filters by any part of the name, upper or lower case alike, before the page is cut', async () => {
        const eu = await get('/v1/stats?contains=eU');
        expect(shown(eu)).toEqual(sorted.filter((name) => name.toLowerCase().includes('eu')));
        expect(eu.body.total).toBe(3);
        asked.length = 0;
        const second = await get('/v1/stats?contains=-EU&offset=1&limit=1');
        expect(shown(second)).toEqual([`${prefix}-delta-eu`]);
        expect(second.body.total).toBe(3);
        expect(asked).toEqual([[`${prefix}-delta-eu`]]);
        const bravo = await get('/v1/stats?contains=BRAVO');
        expect(shown(bravo)).toEqual([`${prefix}-Bravo-EU`, `${prefix}-bravo-us`]);
        // An empty filter filters nothing; one no name has answers no queue and a total of 0.
        expect((await get('/v1/stats?contains=')).body.total).toBe(names.length);
        expect((await get('/v1/stats?contains=nowhere%20at%20all')).body).toEqual({
          queues: [],
          total: 0,
        });
      });

      it('counts and pages only the queues the key can see', async () => {
        const all = await get('/v1/stats', VIEWER);
        const visible = [
          `${prefix}-Bravo-EU`,
          `${prefix}-alpha`,
          `${prefix}-delta-eu`,
          `${prefix}-golf-EU`,
        ].sort();
        expect(shown(all)).toEqual(visible);
        expect(all.body.total).toBe(4);
        const page = await get('/v1/stats?offset=1&limit=2', VIEWER);
        expect(shown(page)).toEqual(visible.slice(1, 3));
        expect(page.body.total).toBe(4);
        const filtered = await get('/v1/stats?contains=us', VIEWER);
        expect(filtered.body).toEqual({ queues: [], total: 0 });
        const golf = await get('/v1/stats?contains=GOLF&limit=1', VIEWER);
        expect(shown(golf)).toEqual([`${prefix}-golf-EU`]);
        expect(golf.body.total).toBe(1);
      });

      it('refuses a bad limit, offset or filter, or another parameter, with 400, reading nothing', async () => {
        asked.length = 0;
        const pattern = 'must match pattern "^[0-9]{1,16}$"';
        for (const [query, message] of [
          ['limit=0', 'limit must be an integer from 1 to 1000, got 0'],
          ['limit=1001', 'limit must be an integer from 1 to 1000, got 1001'],
          ['limit=-1', `querystring.limit ${pattern}`],
          ['limit=x', `querystring.limit ${pattern}`],
          ['limit=1.5', `querystring.limit ${pattern}`],
          ['limit=', `querystring.limit ${pattern}`],
          ['offset=-1', `querystring.offset ${pattern}`],
          ['offset=x', `querystring.offset ${pattern}`],
          ['limit=1&limit=2', 'querystring.limit is given twice; give it once'],
          [
            `contains=${'a'.repeat(81)}`,
            'querystring.contains must NOT have more than 80 characters',
          ],
          ['page=2', 'querystring has an unknown field "page"'],
        ] as const) {
          const refused = await get(`/v1/stats?${query}`);
          expect(refused.status, query).toBe(400);
          expect(refused.body.error, query).toEqual({ code: 'INVALID_ARGUMENT', message });
        }
        expect(asked).toEqual([]);
      });
    },
  );
}

describe('the OpenAPI document', () => {
  it('lists the contains, limit and offset parameters of GET /v1/stats, and its total', async () => {
    const server = await startTestServer();
    try {
      const document = (await call(server.baseUrl, 'GET', '/openapi.json')).body;
      const operation = document.paths['/v1/stats'].get;
      expect(operation.parameters).toEqual([
        expect.objectContaining({ name: 'contains', in: 'query', required: false }),
        expect.objectContaining({ name: 'limit', in: 'query', required: false }),
        expect.objectContaining({ name: 'offset', in: 'query', required: false }),
      ]);
      expect(operation.responses['400']).toEqual({ $ref: '#/components/responses/Error' });
      const answer = operation.responses['200'].content['application/json'].schema;
      expect(answer.required).toEqual(['queues', 'total']);
      expect(answer.properties.total).toEqual({
        type: 'integer',
        minimum: 0,
        maximum: 2 ** 53 - 1,
      });
    } finally {
      await server.close();
    }
  });
});
