import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { startForeignServer } from '../client/foreign-server.js';
import { startTestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// src/cli/main.ts as a real process, run from the sources (no build needed).
const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const run = promisify(execFile);

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server that is not leaseq, answering every request the same way, closed after the test. */
async function foreignServer(
  status: number,
  headers: Record<string, string>,
  body: string,
): Promise<string> {
  const server = await startForeignServer({ status, headers, body });
  cleanups.push(server.close);
  return server.url;
}

const COMMANDS = [
  ['queue', 'stats', 'jobs'],
  ['queue', 'list'],
  ['queue', 'create', 'jobs'],
  ['publish', 'jobs', '{"n":1}'],
  ['receive', 'jobs'],
];

describe('the CLI pointed at a server that is not leaseq', () => {
  for (const transport of ['http', 'stream']) {
    it(`says what answered, in one line, and exits 1 (${transport})`, async () => {
      const url = await foreignServer(200, { 'content-type': 'text/html' }, '<html></html>');
      for (const command of COMMANDS) {
        const name = command.filter((word) => /^[a-z]+$/.test(word) && word !== 'jobs').join(' ');
        const result = await leaseq([...command, '--server', url, '--transport', transport]);
        expect(result.code, name).toBe(1);
        expect(result.stdout, name).toBe('');
        expect(result.stderr, name).toMatch(
          new RegExp(
            `^leaseq ${name}: HTTP_200: the server at ${url.replace(/[.]/g, '\\.')} answered [^\\n]+ with 200 text/html, not a leaseq API answer: is this a leaseq server's URL\\?\\n$`,
          ),
        );
      }
    });
  }

  it('says so for JSON of another API and for an empty 502, from LEASEQ_SERVER too', async () => {
    const json = await foreignServer(200, { 'content-type': 'application/json' }, '{"hello":1}');
    const gateway = await foreignServer(502, {}, '');
    const other = await leaseq(['queue', 'stats', 'jobs', '--transport', 'http'], {
      env: { LEASEQ_SERVER: json },
    });
    expect(other.code).toBe(1);
    expect(other.stderr).toBe(
      `leaseq queue stats: HTTP_200: the server at ${json} answered POST /v1/queues/jobs/operations with 200 application/json of another shape, not a leaseq API answer: is this a leaseq server's URL?\n`,
    );
    const down = await leaseq(['queue', 'list', '--server', gateway]);
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(
      `leaseq queue list: HTTP_502: the server at ${gateway} answered GET /v1/queues with 502 with an empty body, not a leaseq API answer: is this a leaseq server's URL, or a proxy in front of one that cannot reach it?\n`,
    );
  });

  it('prints the message without a stack as a process, with exit code 1', async () => {
    const url = await foreignServer(404, { 'content-type': 'text/html' }, '<html>no</html>');
    const error = await run(process.execPath, [
      '--import',
      'tsx',
      MAIN,
      'queue',
      'stats',
      'jobs',
      '--server',
      url,
    ]).then(
      () => undefined,
      (caught: unknown) => caught as { code: number; stdout: string; stderr: string },
    );
    expect(error?.code).toBe(1);
    expect(error?.stdout).toBe('');
    expect(error?.stderr).toBe(
      `leaseq queue stats: HTTP_404: the server at ${url} answered GET /v1/stream (the stream's WebSocket upgrade) with 404 text/html, not a leaseq API answer: is this a leaseq server's URL?\n`,
    );
  });
});

describe('the CLI given a server URL that ends in /v1', () => {
  for (const transport of ['http', 'stream']) {
    it(`talks to the server at its root (${transport})`, async () => {
      const server = await startTestServer();
      cleanups.push(() => server.close());
      const flags = ['--server', `${server.baseUrl}/v1`, '--transport', transport];
      expect((await leaseq(['queue', 'create', 'jobs', ...flags])).code).toBe(0);
      const published = await leaseq(['publish', 'jobs', '{"n":1}', '--json', ...flags]);
      expect(published.code).toBe(0);
      expect(published.stderr).toBe('');
      const stats = await leaseq(['queue', 'stats', 'jobs', '--json'], {
        env: { LEASEQ_SERVER: `${server.baseUrl}/v1/`, LEASEQ_TRANSPORT: transport },
      });
      expect(stats.code).toBe(0);
      expect(JSON.parse(stats.stdout)).toMatchObject({ ready: 1 });
      expect((await (await server.broker.queue('jobs')).stats()).ready).toBe(1);
    });
  }
});
