import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// `leaseq queue move <queue> <id …> --max N` with more ids than N asks for N of them: what it
// says of those that stayed counts against the N asked for, and says so, not against every id
// named (of which more stayed).

let server: TestServer;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer();
  env = { LEASEQ_SERVER: server.baseUrl };
});

afterAll(async () => {
  await server.close();
});

describe('leaseq queue move with ids and a lower --max', () => {
  it('says how many of the jobs asked for stayed, not of the ids named', async () => {
    const from = await server.broker.queue('max-from');
    await server.broker.queue('max-to');
    await from.publish({ id: 'c' });
    // x and y are absent: of the 3 named 2 stay, of the 2 asked for (--max 2) 1 is missing.
    const argv = ['queue', 'move', 'max-from', 'x', 'y', 'c', '--to', 'max-to', '--max', '2'];
    expect(await leaseq(argv, { env })).toEqual({
      code: 3,
      stdout:
        'moved 1 job\nnot moved 1 of the 2 jobs asked for (--max 2 of the 3 named; absent, not ready or delayed, of another origin or none, or not taken by the target)\n',
      stderr: '',
    });
    expect([...(await (await server.broker.queue('max-to')).inspect()).ready]).toEqual(['c']);
  });
});
