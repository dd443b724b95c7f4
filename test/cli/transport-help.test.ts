import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/run.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// --transport chooses how operations and receives travel. The stream carries no lookups or
// administration (docs/stream.md): `job`, `dead list`, `queue create` … are HTTP requests on
// either transport, and their help says so rather than offer a choice that changes nothing.

const OVER_HTTP = [
  'queue create',
  'queue update',
  'queue list',
  'queue pause',
  'queue resume',
  'queue delete',
  'job',
  'dead list',
  'schedule set',
  'schedule list',
  'schedule remove',
];

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server.close();
});

async function help(name: string): Promise<string> {
  return (await leaseq([...name.split(' '), '--help'])).stdout;
}

describe('--transport in the help of each command', () => {
  it('says that job and the other lookups and administration are HTTP requests on either transport', async () => {
    const said =
      /--transport T {4}stream or http \(env LEASEQ_TRANSPORT\): the same here, as this command is\n {17}HTTP requests on either \(the stream carries operations and receives,\n {17}not administration or lookups\)\n/;
    for (const name of OVER_HTTP) expect(await help(name), name).toMatch(said);
    const remote = COMMANDS.filter((command) => command.remote).map((command) => command.name);
    for (const name of remote.filter((each) => !OVER_HTTP.includes(each))) {
      const text = await help(name);
      expect(text, name).not.toMatch(said);
      expect(text, name).toContain(
        '--transport T    stream (one WebSocket, the default) or http (plain requests; env LEASEQ_TRANSPORT)',
      );
    }
  });

  it('looks a job up with --transport stream as with http', async () => {
    const env = { LEASEQ_SERVER: server.baseUrl };
    await (await server.broker.queue('looked')).publish({ id: 'j', payload: 1 });
    const answers = [];
    for (const transport of ['stream', 'http']) {
      const found = await leaseq(['job', 'looked', 'j', '--json', '--transport', transport], {
        env,
      });
      expect(found.code).toBe(0);
      answers.push(JSON.parse(found.stdout));
    }
    expect(answers[0]).toMatchObject({ id: 'j', state: 'ready', payload: 1 });
    expect(answers[1]).toEqual(answers[0]);
  });
});
