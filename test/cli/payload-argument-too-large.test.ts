import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// A payload given on the command line that the server takes no job of (PAYLOAD_TOO_LARGE, above
// its maxPayloadBytes) is the command line's mistake, as one nested deeper than its maxJsonDepth
// (INVALID_ARGUMENT) is: exit code 2 with the pointer to --help, nothing done.

const MAX_PAYLOAD = 1024;

let server: TestServer;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer({ limits: { maxPayloadBytes: MAX_PAYLOAD, maxJsonDepth: 8 } });
  env = { LEASEQ_SERVER: server.baseUrl };
  await server.broker.queue('large');
});

afterAll(async () => {
  await server.close();
});

function usageError(command: string, code: string) {
  return {
    code: 2,
    stdout: '',
    stderr: expect.stringMatching(
      new RegExp(`^leaseq ${command}: ${code}: [^\\n]*\\nsee leaseq ${command} --help\\n$`),
    ),
  };
}

const large = JSON.stringify('x'.repeat(2 * MAX_PAYLOAD));
const deep = `${'['.repeat(20)}${']'.repeat(20)}`;

describe('a payload argument the server takes no job of', () => {
  for (const transport of ['stream', 'http']) {
    it(`exits 2 for publish, as a payload nested too deep does (${transport})`, async () => {
      const t = ['--transport', transport];
      expect(await leaseq(['publish', 'large', deep, ...t], { env })).toEqual(
        usageError('publish', 'INVALID_ARGUMENT'),
      );
      expect(await leaseq(['publish', 'large', large, ...t], { env })).toEqual(
        usageError('publish', 'PAYLOAD_TOO_LARGE'),
      );
      expect((await (await server.broker.queue('large')).stats()).ready).toBe(0);
    });
  }

  it('exits 2 for schedule set --payload, setting nothing', async () => {
    const argv = ['schedule', 'set', 'large', 'big', '--every', '60000', '--payload', large];
    expect(await leaseq(argv, { env })).toEqual(usageError('schedule set', 'PAYLOAD_TOO_LARGE'));
    expect(await (await server.broker.queue('large')).schedules()).toEqual([]);
  });
});
