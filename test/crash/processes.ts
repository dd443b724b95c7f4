import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type ChildArgs, type Line, parseLine } from './protocol.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHILD = fileURLToPath(new URL('./child.ts', import.meta.url));

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A child process started by these tests, with what it reported so far. */
export class Child {
  /** Complete lines, parsed, in the order written. */
  readonly lines: Line[] = [];
  /** The same lines as text. */
  readonly texts: string[] = [];
  /** Lines that did not parse: they fail the test. */
  readonly malformed: string[] = [];
  private pending = '';
  private stderrText = '';
  private readonly closed: Promise<Exit>;
  private readonly process: ChildProcess;
  private readonly waiters: (() => void)[] = [];
  exit: Exit | undefined;

  constructor(
    readonly label: string,
    args: ChildArgs,
  ) {
    this.process = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(args)], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    started.add(this);
    this.process.stdout?.setEncoding('utf8');
    this.process.stdout?.on('data', (chunk: string) => this.read(chunk));
    this.process.stderr?.setEncoding('utf8');
    this.process.stderr?.on('data', (chunk: string) => {
      this.stderrText += chunk;
    });
    // The parent may have closed stdin already when a child dies: ignore EPIPE.
    this.process.stdin?.on('error', () => undefined);
    this.closed = new Promise<Exit>((resolve) => {
      const ended = (exit: Exit) => {
        if (this.exit !== undefined) return;
        started.delete(this);
        this.exit = exit;
        this.wake();
        resolve(exit);
      };
      this.process.on('close', (code, signal) => ended({ code, signal }));
      this.process.on('error', (error) => {
        this.stderrText += `spawn failed: ${error.message}\n`;
        if (this.process.pid === undefined) ended({ code: null, signal: null });
      });
    });
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  /** What the child wrote to stderr, for failure messages. */
  get stderr(): string {
    return this.stderrText.length > 4000 ? `…${this.stderrText.slice(-4000)}` : this.stderrText;
  }

  /** A torn last line (no newline yet when the child died): it reports nothing. */
  get torn(): string {
    return this.pending;
  }

  /** Resolves when the child reported a line of `kind`; fails when it exits first or times out. */
  async waitFor(kind: Line['kind'], timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.lines.some((line) => line.kind === kind)) return;
      if (this.exit !== undefined) {
        throw new Error(
          `${this.label} exited (${describeExit(this.exit)}) before reporting ${kind}: ${this.stderr}`,
        );
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.label} did not report ${kind} in ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  send(text: string): void {
    this.process.stdin?.write(text);
  }

  /** SIGKILL, by this child's pid, unless it has already exited. */
  kill(): void {
    const pid = this.process.pid;
    if (pid === undefined || this.exit !== undefined) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }

  /** Resolves when the child exited and its output was read to the end. */
  async closedWithin(timeoutMs: number): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${this.label} still running after ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.closed, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private read(chunk: string): void {
    this.pending += chunk;
    const parts = this.pending.split('\n');
    this.pending = parts.pop() ?? '';
    for (const text of parts) {
      this.texts.push(text);
      try {
        this.lines.push(parseLine(text));
      } catch {
        this.malformed.push(text);
      }
    }
    this.wake();
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

/** Children started and not yet exited. */
const started = new Set<Child>();

/** Kills every child these tests started that is still running, and waits for them. */
export async function killStartedChildren(): Promise<void> {
  const running = [...started];
  for (const child of running) child.kill();
  await Promise.all(running.map((child) => child.closedWithin(5000).catch(() => undefined)));
}

export function describeExit(exit: Exit): string {
  return exit.signal === null ? `code ${exit.code}` : `signal ${exit.signal}`;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The run's seed: LEASEQ_CRASH_SEED replays a failed run, otherwise a fresh one. */
export function runSeed(): number {
  const given = process.env.LEASEQ_CRASH_SEED;
  if (given !== undefined && given !== '') {
    const seed = Number(given);
    if (!Number.isSafeInteger(seed) || seed < 0) {
      throw new Error(`LEASEQ_CRASH_SEED must be an integer ≥ 0, got ${given}`);
    }
    return seed;
  }
  return Math.floor(Math.random() * 2 ** 31);
}
