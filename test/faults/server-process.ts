import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The built CLI: the server under test is what users run, `leaseq serve`. */
export const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
/** Loaded into a server child only when a fault needs it (clock, disk full); see that file. */
export const FAULT_HOOKS = fileURLToPath(new URL('./fault-hooks.mjs', import.meta.url));

/** Receipts signed with one secret survive restarts and are good on every server of a cluster. */
export const RECEIPT_SECRET = 'fault-suite-receipt-secret-0123456789abcdef';

export interface ServerSpec {
  storage: string;
  durability?: 'fsync' | 'os';
  /** A control file for fault-hooks.mjs: the child loads the hooks and follows the file. */
  faultControl?: string;
  /** More modules loaded into the child with --import (measuring probes). */
  imports?: string[];
  /** A fixed port (a restart where clients reconnect). Default: any free one. */
  port?: number;
}

export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** One `leaseq serve` child on an ephemeral loopback port. */
export class ServerProcess {
  private readonly child: ChildProcess;
  private output = '';
  private errors = '';
  private readonly exited: Promise<ServerExit>;
  exit: ServerExit | undefined;
  url: string | undefined;

  constructor(
    readonly spec: ServerSpec,
    readonly label: string,
  ) {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first`);
    const args = [
      ...(spec.faultControl === undefined ? [] : ['--import', FAULT_HOOKS]),
      ...(spec.imports ?? []).flatMap((module) => ['--import', module]),
      MAIN,
      'serve',
      '--port',
      String(spec.port ?? 0),
      '--storage',
      spec.storage,
      '--receipt-secret',
      RECEIPT_SECRET,
      '--shutdown-timeout-ms',
      '2000',
      ...(spec.durability === undefined ? [] : ['--durability', spec.durability]),
    ];
    this.child = spawn(process.execPath, args, {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        ...(spec.faultControl === undefined ? {} : { LEASEQ_FAULT_CONTROL: spec.faultControl }),
      },
    });
    running.add(this);
    const collect = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-20_000);
    };
    this.child.stdout?.on('data', collect);
    this.child.stderr?.on('data', (chunk: Buffer) => {
      collect(chunk);
      this.errors = (this.errors + chunk.toString()).slice(-20_000);
    });
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => {
        running.delete(this);
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** What the child printed (stdout and stderr), the last 20 kB. */
  get log(): string {
    return this.output;
  }

  /** What the child printed on stderr alone, the last 20 kB. */
  get stderr(): string {
    return this.errors;
  }

  /** Resolves with the server's URL once it listens; fails when it exits first. */
  async listening(timeoutMs = 20_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const match = /leaseq listening on (http:\/\/[0-9.:]+)/.exec(this.output);
      if (match?.[1] !== undefined) {
        this.url = match[1];
        return this.url;
      }
      if (this.exit !== undefined) {
        throw new Error(
          `${this.label} exited (${describe(this.exit)}) before listening:\n${this.log}`,
        );
      }
      await sleep(20);
    }
    throw new Error(`${this.label} did not listen within ${timeoutMs} ms:\n${this.log}`);
  }

  get port(): number {
    if (this.url === undefined) throw new Error(`${this.label} is not listening`);
    return Number(new URL(this.url).port);
  }

  /** Sends `signal` to this child's pid (never to anything else). */
  signal(signal: NodeJS.Signals): void {
    if (this.exit !== undefined || this.child.pid === undefined) return;
    try {
      process.kill(this.child.pid, signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }

  /** Resolves when the child has exited; kills it if it is still running after `timeoutMs`. */
  async stopped(timeoutMs = 10_000): Promise<ServerExit> {
    const timer = setTimeout(() => this.signal('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  async kill(): Promise<ServerExit> {
    this.signal('SIGKILL');
    return this.stopped();
  }

  async terminate(): Promise<ServerExit> {
    this.signal('SIGTERM');
    return this.stopped();
  }
}

const running = new Set<ServerProcess>();

/** Kills every server child still running (after a failed run). */
export async function killRunningServers(): Promise<void> {
  await Promise.all([...running].map((server) => server.kill()));
}

export function describe(exit: ServerExit): string {
  return exit.signal === null ? `code ${exit.code}` : `signal ${exit.signal}`;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
