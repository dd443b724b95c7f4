import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// A server URL or transport refused for a value from the environment names the variable: the
// command line shows no such flag. A LEASEQ_TRANSPORT left blank is the default transport, as a
// blank LEASEQ_API_KEY is no key.

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
  await server.broker.queue('envq');
});

afterAll(async () => {
  await server.close();
});

describe('values of LEASEQ_TRANSPORT and LEASEQ_SERVER', () => {
  it('takes a blank LEASEQ_TRANSPORT as the default transport', async () => {
    const env = { LEASEQ_SERVER: server.baseUrl, LEASEQ_TRANSPORT: '' };
    const stats = await leaseq(['queue', 'stats', 'envq', '--json'], { env });
    expect(stats).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(stats.stdout)).toMatchObject({ ready: 0 });
  });

  it('names LEASEQ_TRANSPORT when its value is refused, and --transport when the flag is', async () => {
    const env = { LEASEQ_SERVER: server.baseUrl, LEASEQ_TRANSPORT: 'ws' };
    expect(await leaseq(['queue', 'list'], { env })).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'leaseq queue list: LEASEQ_TRANSPORT must be stream or http, got "ws"\nsee leaseq queue list --help\n',
    });
    const flag = await leaseq(['queue', 'list', '--transport', 'ws'], { env });
    expect(flag.stderr).toMatch(
      /^leaseq queue list: --transport must be stream or http, got "ws"\n/,
    );
    expect(flag.code).toBe(2);
  });

  it('names LEASEQ_SERVER when its value is not a server URL', async () => {
    const answer = await leaseq(['queue', 'list'], { env: { LEASEQ_SERVER: '' } });
    expect(answer).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'leaseq queue list: LEASEQ_SERVER: a server URL is http(s)://host:port, got ""\nsee leaseq queue list --help\n',
    });
    const flag = await leaseq(['queue', 'list', '--server', 'ftp://x'], {
      env: { LEASEQ_SERVER: server.baseUrl },
    });
    expect(flag.stderr).toMatch(/^leaseq queue list: a server URL is/);
  });
});
