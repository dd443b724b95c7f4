import { Readable } from 'node:stream';
import type { CliContext } from '../../src/cli/command.js';
import { runCli } from '../../src/cli/run.js';

/** A buffer standing for standard output or error. */
export class Captured {
  text = '';
  constructor(readonly isTTY = false) {}
  write(chunk: string, done?: (error?: Error | null) => void): boolean {
    this.text += chunk;
    done?.();
    return true;
  }
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export interface FakeProcess {
  env?: Record<string, string | undefined>;
  /** Standard input's text; absent: a terminal with nothing typed. */
  stdin?: string;
  stop?: AbortSignal;
}

export function fakeContext(options: FakeProcess = {}) {
  const stdout = new Captured();
  const stderr = new Captured();
  const stdin =
    options.stdin === undefined
      ? Object.assign(Readable.from([]), { isTTY: true })
      : Readable.from([Buffer.from(options.stdin)]);
  const context: CliContext = {
    stdout,
    stderr,
    stdin,
    env: options.env ?? {},
    stop: options.stop ?? new AbortController().signal,
  };
  return { context, stdout, stderr };
}

/** Runs `leaseq <argv>` in this process. */
export async function leaseq(argv: string[], options: FakeProcess = {}): Promise<Run> {
  const { context, stdout, stderr } = fakeContext(options);
  const code = await runCli(argv, context);
  return { code, stdout: stdout.text, stderr: stderr.text };
}
