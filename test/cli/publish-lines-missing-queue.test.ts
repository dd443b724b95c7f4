import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// JSON lines published to a queue that is not there: NOT_FOUND, said before any line is read,
// as for payload arguments. Not "published 0 jobs to it" for empty input (exit code 0), nor a
// refusal of line 1 that hides the error's code.

let server: TestServer;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer();
  env = { LEASEQ_SERVER: server.baseUrl };
});

afterAll(async () => {
  await server.close();
});

describe('publish of JSON lines to a queue that does not exist', () => {
  for (const transport of ['stream', 'http']) {
    it(`is NOT_FOUND with empty input (${transport})`, async () => {
      const run = await leaseq(['publish', 'missing', '--transport', transport], {
        env,
        stdin: '',
      });
      expect(run).toEqual({
        code: 1,
        stdout: '',
        stderr: 'leaseq publish: NOT_FOUND: queue missing does not exist\n',
      });
    });

    it(`is NOT_FOUND before any line is sent (${transport})`, async () => {
      const run = await leaseq(['publish', 'missing', '--json', '--transport', transport], {
        env,
        stdin: '{"id":"a"}\n{"id":"b"}\n',
      });
      expect(run).toEqual({
        code: 1,
        stdout: '',
        stderr: 'leaseq publish: NOT_FOUND: queue missing does not exist\n',
      });
    });
  }

  it('says a key refused on the queue with its code and hint, before any line is sent', async () => {
    const guarded = await startTestServer({
      keys: [
        { name: 'p', key: 'publisher-key-123456', allow: [{ queues: 'a*', actions: ['publish'] }] },
      ],
    });
    try {
      await guarded.broker.queue('b1');
      const run = await leaseq(['publish', 'b1', '--api-key', 'publisher-key-123456'], {
        env: { LEASEQ_SERVER: guarded.baseUrl },
        stdin: '{"id":"a"}\n',
      });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^leaseq publish: FORBIDDEN: .*\n\(this API key lacks the right/);
      expect((await (await guarded.broker.queue('b1')).stats()).published).toBe(0);
    } finally {
      await guarded.close();
    }
  });
});
