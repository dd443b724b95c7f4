import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { fakeContext } from './context.js';

// A batch of lines whose answer never came (the connection broke after the request went out)
// may have been published: said so, never "not published", which would have a user send its
// lines again and publish their jobs without an id twice.

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server.close();
});

/** Forwards every request; the one that publishes `marker` runs, but its answer is lost. */
function losingTheAnswerOf(marker: string): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (typeof init?.body === 'string' && init.body.includes(marker)) {
      await response.arrayBuffer();
      const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      throw new TypeError('fetch failed', { cause: reset });
    }
    return response;
  };
}

describe('publish of JSON lines whose answer was lost', () => {
  it('says the batch may or may not have been published, and stops there', async () => {
    const name = 'answer-lost';
    const queue = await server.broker.queue(name);
    const lines = ['{"payload":1}', '{"payload":"lost-answer"}', '{"payload":3}'];
    const { context, stdout, stderr } = fakeContext({
      env: { LEASEQ_SERVER: server.baseUrl },
      stdin: `${lines.join('\n')}\n`,
    });
    context.fetch = losingTheAnswerOf('lost-answer');
    const code = await runCli(
      ['publish', name, '--batch-size', '1', '--transport', 'http', '--json'],
      context,
    );
    expect(code).toBe(1);
    expect(stdout.text.trim().split('\n')).toHaveLength(1);
    expect(stderr.text).toMatch(
      /^leaseq publish: line 2 may or may not have been published \(1 job was published before it\): .*broke before the answer came/,
    );
    expect(stderr.text).not.toContain('not published');
    // It was: the server ran the request whose answer was lost; line 3 was not sent.
    const stats = await queue.stats();
    expect(stats.ready).toBe(2);
  });
});
