import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../temporary-directory.js';
import { until } from '../until.js';

// SIGTERM sent to a wrapper (npm start, npx leaseq serve) must stop the server it started:
// real process trees, each run on port 0 over a temp SQLite file, bounded in time.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPTS = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts as Record<
  string,
  string
>;
const dir = temporaryDirectory('leaseq-wrapper-');
const started: ChildProcess[] = [];
const serverPids: number[] = [];

afterEach(() => {
  // Whatever a failed test left behind, by pid only.
  for (const pid of serverPids.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL');
  for (const child of started.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A package whose `start` script is `script`, with `dist/` meaning leaseq's built CLI. */
function wrapperPackage(name: string, script: string): string {
  const root = join(dir, name);
  mkdirSync(root, { recursive: true });
  const start = script.replaceAll('dist/', `${ROOT}/dist/`);
  writeFileSync(
    join(root, 'package.json'),
    JSON.stringify({ name, private: true, scripts: { start } }),
  );
  return root;
}

/** Starts `npm start` in `cwd`; resolves with the npm pid, the server's pid and its port. */
function npmStart(cwd: string): Promise<{ npm: ChildProcess; serverPid: number; port: number }> {
  const npm = spawn('npm', ['start', '--silent'], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      LEASEQ_PORT: '0',
      LEASEQ_STORAGE: `sqlite:${join(cwd, 'leaseq.db')}`,
      LEASEQ_SHUTDOWN_TIMEOUT_MS: '2000',
    },
  });
  started.push(npm);
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`the server did not start: ${text}`)), 20_000);
    npm.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const line = text.split('\n').find((each) => each.includes('leaseq listening on'));
      if (line === undefined) return;
      clearTimeout(timer);
      const { pid, url } = JSON.parse(line) as { pid: number; url: string };
      serverPids.push(pid);
      resolve({ npm, serverPid: pid, port: Number(new URL(url).port) });
    });
  });
}

function portRefuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

async function expectStopsOnWrapperSigterm(cwd: string): Promise<void> {
  const { npm, serverPid, port } = await npmStart(cwd);
  expect(serverPid).not.toBe(npm.pid);
  npm.kill('SIGTERM');
  await until(() => !alive(serverPid), {
    what: `server ${serverPid} to stop`,
    timeout: 10_000,
    interval: 50,
  });
  expect(await portRefuses(port)).toBe(true);
}

describe('SIGTERM to the wrapper stops the server (real processes)', () => {
  it('npm start as package.json has it (after its build step): the server gets the signal', async () => {
    const start = SCRIPTS.start as string;
    const afterBuild = start.replace(/^npm run build --silent && /, '');
    expect(afterBuild).not.toBe(start);
    await expectStopsOnWrapperSigterm(wrapperPackage('as-shipped', afterBuild));
  }, 30_000);

  it('a wrapper shell that does not pass the signal on: the server sees its parent go and stops', async () => {
    await expectStopsOnWrapperSigterm(
      wrapperPackage('no-exec', `true && node dist/cli/main.js serve`),
    );
  }, 30_000);
});
