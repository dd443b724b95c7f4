import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { fakeContext, leaseq } from './context.js';

// Stopped by SIGINT or SIGTERM, publish and receive exit 1 and say so, with --json too: on
// standard error, standard output keeping its JSON alone. Without the line, a script saw exit
// code 1 and nothing to tell a stop from a failure, nor where publish stopped.

let server: TestServer;
let env: Record<string, string>;
let counter = 0;
const fresh = () => `jsonstop${++counter}`;

beforeAll(async () => {
  server = await startTestServer();
  env = { LEASEQ_SERVER: server.baseUrl };
});

afterAll(async () => {
  await server.close();
});

describe('a stop by a signal with --json', () => {
  it('publish says before which line it stopped on stderr, its JSON lines on stdout', async () => {
    const name = fresh();
    const queue = await server.broker.queue(name);
    const stop = new AbortController();
    let waiting = () => {};
    const waitingForMore = new Promise<void>((resolve) => {
      waiting = resolve;
    });
    // An idle pipe: two lines, then nothing, never ended.
    const stdin = Object.assign(
      (async function* () {
        yield Buffer.from('{"id":"one"}\n{"id":"two"}\n');
        waiting();
        await new Promise(() => {});
      })(),
      { isTTY: false, destroy: () => {} },
    );
    const { context, stdout, stderr } = fakeContext({ env });
    const running = runCli(['publish', name, '--json'], { ...context, stdin, stop: stop.signal });
    await waitingForMore;
    stop.abort();
    expect(await running).toBe(1);
    expect(
      stdout.text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual([
      { id: 'one', duplicate: false },
      { id: 'two', duplicate: false },
    ]);
    expect(stderr.text).toBe(
      `leaseq publish: stopped before line 3; 2 jobs published (0 duplicates) to ${name}\n`,
    );
    expect(await queue.stats()).toMatchObject({ ready: 2 });
  });

  it('publish stopped before its first line says so too', async () => {
    const name = fresh();
    await server.broker.queue(name);
    const stop = new AbortController();
    stop.abort();
    const stopped = await leaseq(['publish', name, '--json'], {
      env,
      stdin: '{"id":"a"}\n',
      stop: stop.signal,
    });
    expect(stopped).toEqual({
      code: 1,
      stdout: '',
      stderr: `leaseq publish: stopped before line 1; 0 jobs published (0 duplicates) to ${name}\n`,
    });
  });

  it('receive --wait prints [] and says it stopped before a job came', async () => {
    const name = fresh();
    await server.broker.queue(name);
    const stop = new AbortController();
    const stopping = leaseq(['receive', name, '--wait', '20000', '--json'], {
      env,
      stop: stop.signal,
    });
    setTimeout(() => stop.abort(), 100);
    expect(await stopping).toEqual({
      code: 1,
      stdout: '[]\n',
      stderr: 'stopped before a job came\n',
    });
  });
});
