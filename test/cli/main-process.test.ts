import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { Operation } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { call, withWrappedQueues } from '../server/helpers.js';
import { until } from '../until.js';

// src/cli/main.ts as a real process, run from the sources (no build needed): what it does with
// signals and with a standard error nobody reads. Each child is killed by pid if a test fails.
const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const children: ChildProcess[] = [];
let server: { baseUrl: string; close(): Promise<void> } | undefined;

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  await server?.close();
  server = undefined;
});

function leaseqProcess(args: string[]): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, LEASEQ_SERVER: server?.baseUrl ?? 'http://127.0.0.1:1' },
  });
  children.push(child);
  return child;
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode });
    } else child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

function text(stream: NodeJS.ReadableStream | null): () => string {
  let read = '';
  stream?.on('data', (chunk: Buffer) => {
    read += chunk.toString();
  });
  return () => read;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('leaseq as a process (from the sources)', () => {
  it('publish: SIGINT ends the wait for input and sends the batch in hand; a second one ends it at once', async () => {
    // A server whose publish of job "held" waits until released.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let holding = false;
    const real = await open('memory:');
    const broker = withWrappedQueues(real, (queue) =>
      Object.assign(Object.create(queue), {
        execute: async (operations: readonly Operation[]) => {
          if (JSON.stringify(operations).includes('"held"')) {
            holding = true;
            await held;
          }
          return queue.execute(operations);
        },
      }),
    );
    const app = await createApp({
      receiptSecret: 'test-secret-of-at-least-32-characters',
      broker,
    });
    const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    server = {
      baseUrl,
      close: async () => {
        release();
        await app.close();
        await real.close();
      },
    };
    await real.queue('sig');
    const ready = async () => {
      const queue = await real.queue('sig');
      return [...(await queue.inspect()).ready].sort();
    };

    const cli = leaseqProcess(['publish', 'sig', '--batch-size', '2']);
    const stdout = text(cli.stdout);
    const stderr = text(cli.stderr);
    const exit = exited(cli);
    cli.stdin?.write('{"id":"a"}\n{"id":"b"}\n');
    await until(async () => (await ready()).length === 2, {
      what: 'the first batch',
      timeout: 15_000,
      interval: 25,
    });
    // Read, but in hand: a batch of 2 is not full. Then the pipe stays open and idle.
    cli.stdin?.write('{"id":"held"}\n');
    await sleep(300);
    cli.kill('SIGINT');
    await until(() => holding, {
      what: 'the batch in hand to be sent after SIGINT',
      timeout: 5000,
      interval: 25,
    });
    await sleep(300);
    // Still sending what it had read: it waits for the server's answer.
    expect(cli.exitCode, stderr()).toBe(null);
    expect(cli.signalCode).toBe(null);
    // The user insists: the process ends now, whatever it waits for (a quiet FIFO, a lock).
    cli.kill('SIGINT');
    expect(await exit).toEqual({ code: null, signal: 'SIGINT' });
    expect(stdout()).toBe('');
    // The request was sent: the server still stores the batch once it may.
    release();
    await until(async () => (await ready()).length === 3, {
      what: 'the batch sent before the second',
      timeout: 15_000,
      interval: 25,
    });
    expect(await ready()).toEqual(['a', 'b', 'held']);
  }, 30_000);

  it('publish --file of a FIFO that stays quiet: a second SIGINT ends it, whatever it waits for', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-fifo-'));
    const fifo = join(dir, 'jobs');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // A writer that writes one line, then holds the FIFO open and quiet (a read of it blocks).
    const writer = spawn(
      'sh',
      ['-c', `{ printf '%s\\n' '{"id":"x"}'; exec sleep 30; } > "${fifo}"`],
      {
        stdio: 'ignore',
      },
    );
    const broker = await open('memory:');
    await broker.queue('fifo');
    const app = await createApp({ receiptSecret: 'test-secret-of-at-least-32-characters', broker });
    const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    server = { baseUrl, close: () => app.close().finally(() => broker.close()) };
    try {
      const cli = leaseqProcess(['publish', 'fifo', '--file', fifo, '--batch-size', '1']);
      const stdout = text(cli.stdout);
      const exit = exited(cli);
      // Published as read (a batch of one): the process is up, and reads the quiet FIFO on.
      const queue = await broker.queue('fifo');
      await until(async () => (await queue.inspect()).ready.length === 1, {
        what: 'the line written',
        timeout: 15_000,
        interval: 25,
      });
      cli.kill('SIGINT');
      // It says so; then the close of the FIFO waits on the read of it.
      await until(() => stdout().includes('published 1 job'), {
        what: 'its answer to SIGINT',
        timeout: 15_000,
        interval: 25,
      });
      expect(cli.exitCode).toBe(null);
      cli.kill('SIGINT');
      const ended = await Promise.race([exit, sleep(5_000).then(() => 'still running')]);
      expect(ended).toEqual({ code: null, signal: 'SIGINT' });
      expect((await queue.inspect()).ready).toEqual(['x']);
    } finally {
      writer.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it('ends quietly with 141 when the reader of its standard error has gone, as for stdout', async () => {
    const cli = leaseqProcess(['no-such-command']);
    const stdout = text(cli.stdout);
    cli.stderr?.destroy();
    expect(await exited(cli)).toEqual({ code: 141, signal: null });
    expect(stdout()).toBe('');
  }, 30_000);

  it('says in one line that standard output failed (a full disk) and exits 1, no stack trace', async () => {
    const full = openSync('/dev/full', 'w');
    try {
      const cli = spawn(process.execPath, ['--import', 'tsx', MAIN, '--help'], {
        stdio: ['ignore', full, 'pipe'],
      });
      children.push(cli);
      const stderr = text(cli.stderr);
      expect(await exited(cli)).toEqual({ code: 1, signal: null });
      await until(() => stderr().endsWith('\n'), {
        what: 'the message',
        timeout: 15_000,
        interval: 25,
      });
      expect(stderr()).toMatch(/^leaseq: cannot write standard output: ENOSPC[^\n]*\n$/);
    } finally {
      closeSync(full);
    }
  }, 30_000);

  /** `leaseq serve` on a free port over memory:, once it listens: the process and its URL. */
  async function listeningServer() {
    const cli = leaseqProcess(['serve', '--storage', 'memory:', '--port', '0']);
    const stdout = text(cli.stdout);
    const listening = /leaseq listening on (http:\/\/[^"]+)"/;
    await until(() => listening.test(stdout()), {
      what: 'the server to listen',
      timeout: 15_000,
      interval: 25,
    });
    const base = listening.exec(stdout())?.[1] as string;
    expect((await call(base, 'PUT', '/v1/queues/q', { body: {} })).status).toBe(201);
    expect((await call(base, 'PUT', '/v1/queues/idle', { body: {} })).status).toBe(201);
    return { cli, base };
  }

  /** A listening server with a receive waiting on the empty queue `idle`, its log reader gone. */
  async function serverWhoseReaderWent() {
    const { cli, base } = await listeningServer();
    const exit = exited(cli);
    const poll = call(base, 'POST', '/v1/queues/idle/receive', { body: { wait: 15_000 } });
    await sleep(200);
    cli.stdout?.destroy();
    return { cli, base, exit, poll };
  }

  it('serve whose log reader goes away stops as on SIGTERM: a waiting long poll is answered, then 141', async () => {
    // `leaseq serve | head -2`: the reader has gone; the next log line (a delivery) fails.
    const { base, exit, poll } = await serverWhoseReaderWent();
    await call(base, 'POST', '/v1/queues/q/jobs', { body: { id: 'logged' } });
    await call(base, 'POST', '/v1/queues/q/receive', { body: {} });
    // Stopped cleanly, not cut: the waiting long poll gets its empty answer.
    expect((await poll).body).toEqual({ deliveries: [] });
    expect(await exit).toEqual({ code: 141, signal: null });
  }, 30_000);

  it('serve stopped by SIGTERM while its log reader goes too (| pino-pretty, Ctrl-C) exits 0', async () => {
    const { cli, exit, poll } = await serverWhoseReaderWent();
    cli.kill('SIGTERM');
    expect((await poll).body).toEqual({ deliveries: [] });
    expect(await exit).toEqual({ code: 0, signal: null });
  }, 30_000);
});
