import { answeredByServer } from '../client/index.js';
import { type CliContext, EXIT, type Values } from './command.js';
import { printJson } from './remote.js';

/**
 * An input refused on its own (not a receipt, another queue's, a key without the right), as
 * the CLI reports it: `{ …, error: { code, message } }` with --json.
 */
export interface Refusal {
  code: string;
  message: string;
}

/** Refusals a server answered (see answeredByServer): their hints say it was reached. */
const answered = new WeakSet<Refusal>();

/**
 * Acts on each input on its own (receipts to settle, ids to cancel): one refused leaves the
 * others' calls done, and each is reported. The value of each call, or its refusal, in order.
 * The calls go at once: the client sends those of one tick together, each its own operation.
 */
export async function eachInput<I, T>(
  inputs: readonly I[],
  act: (input: I) => Promise<T>,
): Promise<(T | Refusal)[]> {
  const errors: unknown[] = [];
  const results = await Promise.all(
    inputs.map(async (input): Promise<T | Refusal> => {
      try {
        return await act(input);
      } catch (error) {
        errors.push(error);
        const { code = 'ERROR', message = String(error) } = error as Partial<Refusal>;
        const refusal = { code, message };
        if (answeredByServer(error)) answered.add(refusal);
        return refusal;
      }
    }),
  );
  // No server to reach, for any of them: an error that ends the whole command, said once (on
  // standard error, with its hint), not once for each input.
  if (
    errors.length === inputs.length &&
    errors.length > 0 &&
    errors.every((error) => (error as Partial<Refusal>).code === 'STORAGE_UNAVAILABLE')
  ) {
    throw errors[0];
  }
  return results;
}

function isRefusal(result: unknown): result is Refusal {
  return typeof result === 'object' && result !== null && 'code' in result;
}

/** 1 when an input was refused; else 3 when any was not done (stale, absent); else 0. */
function exitForEach<T>(
  results: readonly (T | Refusal)[],
  notDone: (result: T) => boolean,
): number {
  if (results.some(isRefusal)) return EXIT.failed;
  return results.some((result) => notDone(result as T)) ? EXIT.stale : EXIT.ok;
}

/**
 * What to do about an error of this code when talking to a server, for someone at a terminal;
 * undefined when there is nothing to add. The server's own words name HTTP headers.
 * `answered`: the server sent the error (it was reached), rather than this client making it.
 */
export function hintFor(code: string, answered: boolean): string | undefined {
  switch (code) {
    case 'STORAGE_UNAVAILABLE':
      return answered
        ? "the server answered, but its storage failed: see the server's log and GET /readyz"
        : 'is `leaseq serve` running there? --server or LEASEQ_SERVER names it';
    case 'UNAUTHENTICATED':
      return 'give a valid API key: --api-key KEY or LEASEQ_API_KEY';
    case 'FORBIDDEN':
      return "this API key lacks the right for this queue or action: use a key the server's keys allow it";
    default:
      return undefined;
  }
}

/**
 * After the lines of the inputs refused, each refusal's hint once (as text only: --json output
 * is standard output's objects alone).
 */
function writeHints(results: readonly unknown[], values: Values, context: CliContext): void {
  if (values.json) return;
  const hints = new Set(
    results.filter(isRefusal).map((refusal) => hintFor(refusal.code, answered.has(refusal))),
  );
  for (const hint of hints) if (hint !== undefined) context.stderr.write(`(${hint})\n`);
}

/** How a command that acts on each input reports each one (see reportEach). */
export interface EachReport<T> {
  /** The input's field in --json lines. */
  field: 'receipt' | 'id';
  /** The input as a text line shows it. */
  shown(input: string): string;
  /** The text of a refusal, before the input: "not acked". */
  refused: string;
  /** The result's field in --json lines ("acked"). */
  resultField: string;
  /** The text line of a result. */
  line(result: T, shown: string): string;
  /** A result of an input not done (stale, absent): exit code 3. */
  notDone(result: T): boolean;
}

/**
 * Prints, in order, each input's result (stdout) or refusal (stderr, or a `{…, error}` line
 * with --json), then the hints of the refusals; answers the exit code.
 */
export function reportEach<T>(
  inputs: readonly string[],
  results: readonly (T | Refusal)[],
  report: EachReport<T>,
  values: Values,
  context: CliContext,
): number {
  inputs.forEach((input, index) => {
    const result = results[index] as T | Refusal;
    const shown = report.shown(input);
    if (isRefusal(result)) {
      if (values.json) printJson(context, { [report.field]: input, error: result });
      else context.stderr.write(`${report.refused} ${shown}: ${result.code}: ${result.message}\n`);
      return;
    }
    if (values.json) printJson(context, { [report.field]: input, [report.resultField]: result });
    else context.stdout.write(`${report.line(result, shown)}\n`);
  });
  writeHints(results, values, context);
  return exitForEach(results, report.notDone);
}
