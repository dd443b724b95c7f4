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

/** Forwards every request; the one that publishes `marker` is answered 503 with `error`. */
function refusingWith503(marker: string, error: Record<string, unknown>): typeof fetch {
  return async (input, init) => {
    if (typeof init?.body === 'string' && init.body.includes(marker)) {
      return new Response(JSON.stringify({ error }), {
        status: 503,
        headers: { 'content-type': 'application/json' },
      });
    }
    return fetch(input, init);
  };
}

describe('publish of JSON lines answered 503 STORAGE_UNAVAILABLE', () => {
  it('says the batch may or may not have been published when the storage failed at its commit', async () => {
    const name = 'storage-failed-at-commit';
    await server.broker.queue(name);
    const { context, stderr } = fakeContext({
      env: { LEASEQ_SERVER: server.baseUrl },
      stdin: '{"payload":1}\n{"payload":"at-commit"}\n',
    });
    context.fetch = refusingWith503('at-commit', {
      code: 'STORAGE_UNAVAILABLE',
      message:
        'the storage is unavailable while this call was under way: it may or may not have taken effect',
      mayHaveTakenEffect: true,
    });
    const code = await runCli(
      ['publish', name, '--batch-size', '1', '--transport', 'http'],
      context,
    );
    expect(code).toBe(1);
    expect(stderr.text).toMatch(
      /^leaseq publish: line 2 may or may not have been published \(1 job was published before it\)/,
    );
    expect(stderr.text).not.toContain('not published');
  });

  it('says the batch was not published when the storage failed before any commit', async () => {
    const name = 'storage-failed-before';
    await server.broker.queue(name);
    const { context, stderr } = fakeContext({
      env: { LEASEQ_SERVER: server.baseUrl },
      stdin: '{"payload":1}\n{"payload":"before"}\n',
    });
    context.fetch = refusingWith503('before', {
      code: 'STORAGE_UNAVAILABLE',
      message: 'the storage is unavailable',
    });
    const code = await runCli(
      ['publish', name, '--batch-size', '1', '--transport', 'http'],
      context,
    );
    expect(code).toBe(1);
    expect(stderr.text).toMatch(
      /^leaseq publish: line 2 was not published \(1 job was published before it\)/,
    );
  });
});
