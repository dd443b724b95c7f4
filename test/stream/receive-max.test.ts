import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { leaseq } from '../cli/context.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

// A waiting receive of `max` jobs over the stream gets them as in-process and over plain HTTP:
// all that is ready at once, not one and the rest held and given back later.

const open: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const each of open.splice(0).reverse()) await each.close();
});

async function connect(): Promise<{ server: TestServer; client: RemoteBroker }> {
  const server = await startTestServer({});
  open.push(server);
  const client = new RemoteBroker(server.baseUrl, { transport: 'stream' });
  open.push(client);
  return { server, client };
}

describe('a waiting receive of max jobs over the stream', () => {
  it('takes every ready job up to max in one call, none held and given back', async () => {
    const { client } = await connect();
    const queue = await client.queue('jobs', { visibility: 60_000 });
    await queue.publishBatch(Array.from({ length: 10 }, (_, index) => ({ id: `j${index}` })));
    const counts: number[] = [];
    for (let call = 0; call < 3; call++) {
      counts.push((await queue.receive({ max: 10, wait: 300 })).length);
    }
    expect(counts).toEqual([10, 0, 0]);
    expect(await queue.stats()).toMatchObject({ active: 10, deliveries: 10, nacks: 0 });
  });

  it('takes the jobs of a batch published while it waits, together', async () => {
    const { client } = await connect();
    const queue = await client.queue('jobs', { visibility: 60_000 });
    const waiting = queue.receive({ max: 10, wait: 5000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await queue.publishBatch(Array.from({ length: 5 }, (_, index) => ({ id: `j${index}` })));
    expect((await waiting).map((delivery) => delivery.id)).toEqual(['j0', 'j1', 'j2', 'j3', 'j4']);
  });

  it('the CLI receive --max 10 --wait prints the ten ready jobs', async () => {
    const { server, client } = await connect();
    const queue = await client.queue('cli', { visibility: 60_000 });
    await queue.publishBatch(Array.from({ length: 10 }, (_, index) => ({ id: `c${index}` })));
    const result = await leaseq(['receive', 'cli', '--max', '10', '--wait', '2000', '--json'], {
      env: { LEASEQ_SERVER: server.baseUrl },
    });
    expect(result.code).toBe(0);
    const received = JSON.parse(result.stdout) as { id: string }[];
    expect(received.map((delivery) => delivery.id)).toEqual(
      Array.from({ length: 10 }, (_, index) => `c${index}`),
    );
    expect(await queue.stats()).toMatchObject({ active: 10, deliveries: 10, nacks: 0 });
  });
});
