import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { fakeContext, type Run } from './context.js';

// extend and nack --delay read the server's limits to check their flag once, before any
// receipt. A server that cannot be reached there ends the command at once: read again for the
// receipts, a server that does not answer would be waited for twice (a timeout each: 62 s
// rather than 32 s measured against a socket that never answers).

let server: TestServer;
let asked: number;

/** The server, but for GET /v1/limits, whose connection is refused as a server's that is gone. */
const limitsUnreachable: typeof fetch = async (input, init) => {
  const url = input instanceof Request ? input.url : String(input);
  if (new URL(url).pathname === '/v1/limits') {
    asked += 1;
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
      code: 'ECONNREFUSED',
      syscall: 'connect',
    });
    throw new TypeError('fetch failed', { cause: refused });
  }
  return fetch(input, init);
};

async function run(argv: string[]): Promise<Run> {
  const { context, stdout, stderr } = fakeContext({ env: { LEASEQ_SERVER: server.baseUrl } });
  context.fetch = limitsUnreachable;
  const code = await runCli(argv, context);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

beforeAll(async () => {
  server = await startTestServer();
  await server.broker.queue('settle');
});

afterAll(async () => {
  await server.close();
});

const RECEIPTS = ['receipt-one', 'receipt-two', 'receipt-three'];

describe('extend and nack --delay against a server that cannot be reached', () => {
  for (const argv of [
    ['extend', 'settle', ...RECEIPTS, '--visibility', '1000'],
    ['nack', 'settle', ...RECEIPTS, '--delay', '1000'],
  ]) {
    it(`${argv[0]} asks for the limits once and says the error once`, async () => {
      asked = 0;
      const result = await run([...argv, '--transport', 'http']);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(
        new RegExp(
          `^leaseq ${argv[0]}: STORAGE_UNAVAILABLE: cannot reach [^\\n]*\\n\\(is \`leaseq serve\` running there\\?[^\\n]*\\)\\n$`,
        ),
      );
      expect(asked).toBe(1);
    });
  }
});
