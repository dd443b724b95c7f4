import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer } from '../server/helpers.js';

/** The built CLI: `npm test` builds before vitest runs. */
const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const run = promisify(execFile);
let child: ChildProcess | undefined;

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first`);
});

afterEach(() => {
  if (child?.exitCode === null) child.kill('SIGKILL');
  child = undefined;
});

/** Resolves with the first stdout match of `pattern`, or fails after `ms`. */
function waitForOutput(
  process: ChildProcess,
  pattern: RegExp,
  ms = 10_000,
): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no ${pattern} in: ${text}`)), ms);
    process.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = pattern.exec(text);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match);
      }
    });
  });
}

describe('the built CLI as a real process', () => {
  it('ends quietly with 141, as SIGPIPE would, when the reader of its output goes away', async () => {
    const server = await startTestServer();
    try {
      const queue = await server.broker.queue('many');
      await queue.publish({ id: 'job-0' });
      const [delivery] = await queue.receive();
      await queue.reject(delivery?.token ?? 0, { requeue: false });
      // `leaseq dead list many --server … | head -c 0`: the reader has left before the first
      // byte, so the first write fails however much of the output the pipe's buffer would hold.
      const cli = spawn(process.execPath, [
        MAIN,
        'dead',
        'list',
        'many',
        '--server',
        server.baseUrl,
      ]);
      child = cli;
      let stderr = '';
      cli.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      cli.stdout.destroy();
      const code = await new Promise<number | null>((resolve) => cli.on('exit', resolve));
      expect(stderr).toBe('');
      expect(code).toBe(141);
    } finally {
      await server.close();
    }
  });

  it('prints its help: node dist/cli/main.js --help', async () => {
    const { stdout } = await run(process.execPath, [MAIN, '--help']);
    expect(stdout).toContain('usage: leaseq <command> [options]');
    expect(stdout).toContain('serve');
  });

  it('serves until SIGTERM, answering a waiting long poll empty, and exits 0', async () => {
    child = spawn(process.execPath, [MAIN, 'serve', '--storage', 'memory:', '--port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const [, url] = await waitForOutput(child, /leaseq listening on (http:\/\/[^"]+)"/);
    const base = url as string;
    expect((await call(base, 'PUT', '/v1/queues/q', { body: {} })).status).toBe(201);
    const poll = call(base, 'POST', '/v1/queues/q/receive', { body: { wait: 15_000 } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const exited = new Promise<number | null>((resolve) => child?.once('exit', resolve));
    const started = Date.now();
    child.kill('SIGTERM');
    expect((await poll).body).toEqual({ deliveries: [] });
    expect(await exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('writes its log lines in blocks, yet a line of a quiet moment shows within a second, and the last at exit', async () => {
    child = spawn(process.execPath, [MAIN, 'serve', '--storage', 'memory:', '--port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const [, url] = await waitForOutput(child, /leaseq listening on (http:\/\/[^"]+)"/);
    const base = url as string;
    await call(base, 'PUT', '/v1/queues/q', { body: {} });
    await call(base, 'POST', '/v1/queues/q/jobs', { body: { id: 'quiet' } });
    const asked = Date.now();
    const [delivery] = (await call(base, 'POST', '/v1/queues/q/receive', { body: {} })).body
      .deliveries;
    // One short line, far from filling a block: the periodic flush writes it.
    const shown = async (pattern: RegExp) => {
      while (!pattern.test(output) && Date.now() - asked < 5000) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return Date.now() - asked;
    };
    expect(await shown(/"jobId":"quiet"[^\n]*"msg":"delivered"/)).toBeLessThan(1000);
    await call(base, 'POST', '/v1/queues/q/ack', { body: { receipt: delivery.receipt } });
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    expect(output).toMatch(/"msg":"acked"[\s\S]*"msg":"stopped"/);
  });
});
