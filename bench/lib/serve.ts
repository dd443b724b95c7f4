import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { sleep } from './stats.js';

/** A `leaseq serve` process started by a benchmark. */
export interface RunningServer {
  url: string;
  /** The last warnings and errors the server logged. */
  logTail(): string;
  /** Stops it by pid (SIGTERM, then SIGKILL after 15 s) and removes its log. */
  stop(): Promise<void>;
}

export interface ServeOptions {
  /** The built CLI, `dist/cli/main.js`. */
  cli: string;
  /** Flags of `leaseq serve` besides `--port`. */
  args: readonly string[];
  /** Where its output goes; removed at stop. */
  logFile: string;
  /** Flags of node before the script (e.g. --cpu-prof). */
  nodeFlags?: readonly string[];
  cwd?: string;
}

/** `leaseq serve` on a free loopback port, once it answers /readyz (15 s at most). */
export async function startServe(options: ServeOptions): Promise<RunningServer> {
  const port = await freePort();
  const log = openSync(options.logFile, 'w');
  const child = spawn(
    process.execPath,
    [...(options.nodeFlags ?? []), options.cli, 'serve', '--port', String(port), ...options.args],
    { cwd: options.cwd, stdio: ['ignore', log, log] },
  );
  closeSync(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const logTail = () => {
    try {
      const lines = readFileSync(options.logFile, 'utf8').split('\n');
      return lines
        .filter((line) => !line.startsWith('{"level":30'))
        .slice(-8)
        .join('\n');
    } catch {
      return '(no log)';
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      process.kill(child.pid, 'SIGTERM');
      const killer = setTimeout(
        () => child.pid !== undefined && process.kill(child.pid, 'SIGKILL'),
        15_000,
      );
      await exited;
      clearTimeout(killer);
    }
    rmSync(options.logFile, { force: true });
  };
  for (const deadline = performance.now() + 15_000; performance.now() < deadline; ) {
    if (child.exitCode !== null) break;
    try {
      const ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) });
      if (ready.ok) return { url, logTail, stop };
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  const tail = logTail();
  await stop();
  throw new Error(`leaseq serve did not become ready on ${url}:\n${tail}`);
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
