import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { fakeContext, type Run } from './context.js';

// A server without GET /v1/limits (older than the route) is taken by the client to have the
// default maxBatch, 100, which it may have raised. --batch-size is refused above the maxBatch a
// server says, not above that guess: there the server's own answer decides, as before.

const MAX_BATCH = 500;

let server: TestServer;
let dir: string;
let counter = 0;
const fresh = () => `unsaid${++counter}`;

/** Forwards every request but GET /v1/limits, answered as a server without the route does. */
const withoutLimitsRoute: typeof fetch = async (input, init) => {
  const url = input instanceof Request ? input.url : String(input);
  if (new URL(url).pathname === '/v1/limits') {
    return new Response(
      JSON.stringify({ error: { code: 'NOT_FOUND', message: 'no such route' } }),
      {
        status: 404,
        headers: { 'content-type': 'application/json' },
      },
    );
  }
  return fetch(input, init);
};

async function run(argv: string[], options: { limitsRoute: boolean }): Promise<Run> {
  const { context, stdout, stderr } = fakeContext({ env: { LEASEQ_SERVER: server.baseUrl } });
  if (!options.limitsRoute) context.fetch = withoutLimitsRoute;
  const code = await runCli(argv, context);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

beforeAll(async () => {
  server = await startTestServer({ limits: { maxBatch: MAX_BATCH } });
  dir = mkdtempSync(join(tmpdir(), 'leaseq-cli-unsaid-'));
});

afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function jobsFile(count: number): string {
  const file = join(dir, `${fresh()}.jsonl`);
  const lines = Array.from({ length: count }, (_, i) => JSON.stringify({ id: `j${i}` }));
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

describe('--batch-size against a server that does not say its maxBatch', () => {
  it('publish --file sends batches above the default maxBatch the server takes', async () => {
    const name = fresh();
    await server.broker.queue(name);
    const published = await run(
      ['publish', name, '--file', jobsFile(300), '--batch-size', '200', '--transport', 'http'],
      { limitsRoute: false },
    );
    expect(published).toEqual({
      code: 0,
      stdout: `published 300 jobs (0 duplicates) to ${name}\n`,
      stderr: '',
    });
    expect((await (await server.broker.queue(name)).stats()).ready).toBe(300);
  });

  it('dead redrive redrives in batches above the default maxBatch the server takes', async () => {
    const name = fresh();
    const queue = await server.broker.queue(name);
    await queue.publishBatch(Array.from({ length: 150 }, (_, i) => ({ id: `d${i}` })));
    for (const delivery of await queue.receive({ max: 150 })) {
      await queue.nack(delivery.token, { requeue: false });
    }
    const redriven = await run(
      ['dead', 'redrive', name, '--batch-size', '150', '--transport', 'http'],
      { limitsRoute: false },
    );
    expect(redriven).toEqual({ code: 0, stdout: 'redriven 150 jobs\n', stderr: '' });
    expect((await queue.stats()).ready).toBe(150);
  });

  it('still refuses a --batch-size above the maxBatch a server says, before anything is done', async () => {
    const name = fresh();
    const queue = await server.broker.queue(name);
    const over = String(MAX_BATCH + 1);
    const said = `--batch-size must be at most ${MAX_BATCH} (this server's maxBatch), got ${over}`;
    const refused = await run(['publish', name, '--file', jobsFile(3), '--batch-size', over], {
      limitsRoute: true,
    });
    expect(refused).toEqual({
      code: 2,
      stdout: '',
      stderr: `leaseq publish: ${said}\nsee leaseq publish --help\n`,
    });
    const redrive = await run(['dead', 'redrive', name, '--batch-size', over], {
      limitsRoute: true,
    });
    expect(redrive).toEqual({
      code: 2,
      stdout: '',
      stderr: `leaseq dead redrive: ${said}\nsee leaseq dead redrive --help\n`,
    });
    expect((await queue.stats()).ready).toBe(0);
  });

  it('refuses --batch-size with named ids, which go one per request, before anything is done', async () => {
    const name = fresh();
    const queue = await server.broker.queue(name);
    await queue.publish({ id: 'a' });
    const [delivery] = await queue.receive();
    if (delivery === undefined) throw new Error('no delivery');
    await queue.nack(delivery.token, { requeue: false });
    const refused = await run(['dead', 'redrive', name, 'a', '--batch-size', '10'], {
      limitsRoute: true,
    });
    expect(refused).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'leaseq dead redrive: --batch-size applies to a redrive of every dead job, not to named ids (each is redriven on its own)\nsee leaseq dead redrive --help\n',
    });
    expect((await queue.job('a'))?.state).toBe('dead');
  });
});
