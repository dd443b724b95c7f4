import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../temporary-directory.js';
import { call, startTestServer, type TestServer } from './helpers.js';

const dir = temporaryDirectory('leaseq-queue-create-');
const servers: TestServer[] = [];
afterAll(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function server(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const started = await startTestServer(options);
  servers.push(started);
  return started;
}

describe('PUT /v1/queues/{name}: the storage says whether the queue was created', () => {
  it('a queue another process deleted is created again: 201, created true', async () => {
    const { baseUrl, broker } = await server();
    expect(await call(baseUrl, 'PUT', '/v1/queues/again', { body: {} })).toMatchObject({
      status: 201,
      body: { created: true },
    });
    // Deleted past this server's routes, as another process sharing the storage would.
    expect(await broker.deleteQueue('again')).toBe(true);
    const again = await call(baseUrl, 'PUT', '/v1/queues/again', { body: { visibility: 5000 } });
    expect(again).toMatchObject({
      status: 201,
      body: { created: true, options: { visibility: 5000 } },
    });
    expect(await call(baseUrl, 'PUT', '/v1/queues/again', { body: {} })).toMatchObject({
      status: 200,
      body: { created: false },
    });
  });

  it('maxVisibilityMs: a queue deleted elsewhere is not made again with the default lease', async () => {
    const { baseUrl, broker } = await server({ limits: { maxVisibilityMs: 1000 } });
    const put = (body: object) => call(baseUrl, 'PUT', '/v1/queues/short', { body });
    expect(await put({ visibility: 500 })).toMatchObject({ status: 201 });
    // Open as it stands, the default not taken: fine.
    expect(await put({})).toMatchObject({ status: 200, body: { created: false } });
    expect(await put({ visibility: 600 })).toMatchObject({
      status: 409,
      body: { error: { code: 'CONFLICT' } },
    });
    expect(await broker.deleteQueue('short')).toBe(true);
    expect(await put({})).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_ARGUMENT' } },
    });
    expect(await broker.listQueues()).toEqual([]);
  });

  it('two servers over one storage creating one queue at once: exactly one hears created', async () => {
    const file = `sqlite:${join(dir, 'shared.db')}`;
    const a = await server({ url: file });
    const b = await server({ url: file });
    for (let n = 0; n < 10; n++) {
      const path = `/v1/queues/race-${n}`;
      const answers = await Promise.all([
        call(a.baseUrl, 'PUT', path, { body: {} }),
        call(b.baseUrl, 'PUT', path, { body: {} }),
      ]);
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 201]);
      expect(answers.filter((answer) => answer.body.created === true)).toHaveLength(1);
    }
  });
});
