import type { ParseArgsConfig } from 'node:util';
import { RemoteError } from '../client/index.js';
import { CodedError, ValidationError } from '../core/index.js';
import { doneCountOf } from '../wire/index.js';
import { counted } from './format.js';

/** Where a command writes: standard output or error, or a test's buffer. */
export interface Output {
  /**
   * `done`, when given, is called once the text is handed to the system (a stream's write
   * callback), with the error when that failed (EPIPE: its reader went away).
   */
  write(text: string, done?: (error?: Error | null) => void): unknown;
  /** A terminal: progress bars are drawn only there (or with --progress). */
  isTTY?: boolean;
}

/** What a command may use from its process; main.ts gives the real ones, tests give fakes. */
export interface CliContext {
  stdout: Output;
  stderr: Output;
  /** Standard input, for `publish` reading JSON lines. */
  stdin: AsyncIterable<string | Buffer> & { isTTY?: boolean };
  env: Readonly<Record<string, string | undefined>>;
  /** Aborts when the process is told to stop (SIGTERM, SIGINT): `serve` then shuts down. */
  stop: AbortSignal;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
  /**
   * From this call until the function it returns is called, a failure of standard output (its
   * reader went away) is the command's to handle, heard through `done` of its writes: the
   * process is not ended for it. `receive --auto-ack` so gives back the jobs it did not write.
   * The function returned takes `said`: true when the command told of the failure on stderr
   * (a later failure of the same output then ends the process without a second word).
   * Absent (tests): nothing ends the process for it anyway.
   */
  handleOutputErrors?: () => (said?: boolean) => void;
  /**
   * Said by a command whose `hearsStop` is `'once-started'` when it begins to hear the first
   * signal (`stop`). Absent (tests): nothing to say it to.
   */
  started?: () => void;
}

export type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

export type Values = Record<string, string | boolean | string[] | undefined>;

export interface Invocation {
  values: Values;
  positionals: string[];
  context: CliContext;
}

/** One `leaseq …` command. `run` resolves to the exit code. */
export interface Command {
  /** The words that select it: `serve`, `queue create`. */
  name: string;
  summary: string;
  /** After `leaseq <name> `: positional arguments and options. */
  usage: string;
  /** Lines of help after the usage: what each option means. */
  details: string[];
  options: OptionsConfig;
  /** Reaches a server: gets --server, --api-key and --json. */
  remote: boolean;
  /**
   * Hears the first SIGINT or SIGTERM (`context.stop`) and finishes what it has in hand, as its
   * help says. Any other command has nothing to finish: the first signal ends it at once, as
   * the default action would, not once a server that does not answer times out.
   * `'once-started'`: only from its call of `context.started()` on (`serve`, once it listens);
   * before, it has nothing in hand, and its start may wait for the storage without end (another
   * process's migration holding the lock), so the first signal ends it at once.
   */
  hearsStop?: true | 'once-started';
  /**
   * Its requests are HTTP requests whatever --transport says: administration and lookups, which
   * the stream does not carry (it carries operations and receives, docs/stream.md). Its help
   * says so where it names --transport.
   */
  overHttp?: true;
  run(invocation: Invocation): Promise<number>;
}

/** Exit codes. */
export const EXIT = {
  ok: 0,
  /**
   * The request failed (an error from the server, or no server), or, for a command that acts
   * on each input on its own, one input was refused (the others done, each reported).
   */
  failed: 1,
  /**
   * The command line is wrong: found by the CLI, or by the client's or server's checks of the
   * values it passed on (see fromCommandLine). Nothing was done.
   */
  usage: 2,
  /**
   * Some receipts named deliveries that were no longer live (ack/nack answered false), some
   * jobs to cancel were absent or dead, some jobs to redrive were absent or not dead, or some
   * jobs named to move stayed.
   */
  stale: 3,
  /**
   * The reader of standard output went away (EPIPE, `| head -1`): the shell's code for a
   * process ended by SIGPIPE (128 + 13), so that pipefail still sees it.
   */
  readerGone: 141,
} as const;

/** A mistake in the command line: printed with a pointer to --help, exit code 2. */
export class UsageError extends CodedError<'USAGE'> {
  readonly code = 'USAGE' as const;
}

/**
 * Runs a call made of command-line values alone (queue names, flags, ids or payloads given as
 * arguments): its ValidationError, from the client's checks or the server's, is a mistake in
 * the command line, said and exited with as the CLI's own checks are (2), not a failure (1). So
 * is its PAYLOAD_TOO_LARGE: what is too large is what the command line gave (a payload above the
 * server's maxPayloadBytes, as one nested deeper than its maxJsonDepth is INVALID_ARGUMENT).
 * Not for a call that also carries other input (jobs read from a file, receipts acted on one by
 * one) or one a stored setting can make refused: there the refusal is not the command line's.
 */
export async function fromCommandLine<T>(call: () => T | Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const refused =
      error instanceof ValidationError ||
      (error instanceof RemoteError && error.code === 'PAYLOAD_TOO_LARGE');
    // Refused after some steps were done: not a mistake of nothing done, said as a failure.
    if (!refused || (doneCountOf(error) ?? 0) > 0) throw error;
    throw new UsageError(`${error.code}: ${error.message}`, { cause: error });
  }
}

/** What a command did before the error that ended it, by that error (see doneBefore). */
const doneBeforeErrors = new WeakMap<object, string>();

/**
 * Runs a call of a redrive or move that may end with an error after some of its steps: on the
 * SQL engines each step of 1,000 jobs commits on its own, and the error then carries how many
 * jobs they took (`doneCount`, R20). That count, with `before` (the jobs earlier calls of the
 * command took), is said after the error, "1000 jobs were redriven before the error", when it
 * is not 0: an error said alone means nothing was done.
 */
export async function sayingDoneBefore<T>(
  verb: string,
  before: number,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const done = before + (doneCountOf(error) ?? 0);
    if (done > 0 && typeof error === 'object' && error !== null) {
      doneBeforeErrors.set(
        error,
        `${counted(done, 'job')} ${done === 1 ? 'was' : 'were'} ${verb} before the error`,
      );
    }
    throw error;
  }
}

/** The line sayingDoneBefore keeps for `error`, if any. */
export function doneBefore(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? doneBeforeErrors.get(error) : undefined;
}
