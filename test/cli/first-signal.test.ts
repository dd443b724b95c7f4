import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../until.js';

// src/cli/main.ts as a real process, run from the sources, against a server that takes the
// connection and never answers: a command with nothing to finish ends at the first signal.
const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const children: ChildProcess[] = [];
let silent: { server: Server; sockets: Socket[] } | undefined;

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  if (silent !== undefined) {
    for (const socket of silent.sockets) socket.destroy();
    const { server } = silent;
    await new Promise((resolve) => server.close(resolve));
    silent = undefined;
  }
});

/** A TCP server that reads what comes and never answers; resolves to its URL. */
async function silentServer(): Promise<string> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.resume();
  });
  silent = { server, sockets };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return `http://127.0.0.1:${port}`;
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode });
    } else child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the first signal', () => {
  const cases = [
    { args: ['queue', 'stats', 'q', '--transport', 'http'], signal: 'SIGINT' },
    { args: ['queue', 'list'], signal: 'SIGTERM' },
    { args: ['ack', 'q', 'receipt'], signal: 'SIGINT' },
    { args: ['job', 'q', 'a', '--transport', 'http'], signal: 'SIGTERM' },
  ] as const;

  for (const { args, signal } of cases) {
    it(`ends leaseq ${args.join(' ')} at once (${signal}) while its server does not answer`, async () => {
      const baseUrl = await silentServer();
      const cli = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, LEASEQ_SERVER: baseUrl },
      });
      children.push(cli);
      const exit = exited(cli);
      // The request is out: the command waits for the answer (30 s before it gives up).
      await until(() => (silent?.sockets.length ?? 0) > 0, {
        what: 'the connection of the command',
        timeout: 15_000,
        interval: 25,
      });
      await sleep(200);
      cli.kill(signal);
      const ended = await Promise.race([exit, sleep(5_000).then(() => 'still running')]);
      expect(ended).toEqual({ code: null, signal });
    }, 30_000);
  }
});
