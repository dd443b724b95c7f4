import { parseArgs } from 'node:util';
import { answeredByServer, ConnectionLostError, RemoteError } from '../client/index.js';
import { LeaseqError } from '../core/index.js';
import { VERSION } from '../server/index.js';
import { type CliContext, type Command, doneBefore, EXIT, UsageError } from './command.js';
import { cancel } from './commands/cancel.js';
import { deadList, deadRedrive } from './commands/dead.js';
import { job } from './commands/job.js';
import { publish } from './commands/publish.js';
import {
  queueCreate,
  queueDelete,
  queueList,
  queueMove,
  queuePause,
  queuePurge,
  queueResume,
  queueStats,
  queueUpdate,
} from './commands/queue.js';
import { receive } from './commands/receive.js';
import { scheduleList, scheduleRemove, scheduleSet } from './commands/schedule.js';
import { secretRotate } from './commands/secret.js';
import { serve } from './commands/serve.js';
import { ack, extend, nack } from './commands/settle.js';
import { hintFor } from './each-input.js';
import { REMOTE_OPTIONS, remoteDetails } from './remote.js';

export const COMMANDS: readonly Command[] = [
  serve,
  queueCreate,
  queueUpdate,
  queueList,
  queueStats,
  queueMove,
  queuePause,
  queueResume,
  queuePurge,
  queueDelete,
  publish,
  receive,
  ack,
  nack,
  extend,
  cancel,
  job,
  deadList,
  deadRedrive,
  scheduleSet,
  scheduleList,
  scheduleRemove,
  secretRotate,
];

/** Whether the command `argv` names hears the first signal itself (see Command.hearsStop). */
export function hearsStop(argv: readonly string[]): Command['hearsStop'] {
  return findCommand(argv)?.command.hearsStop;
}

/** Runs `leaseq <argv…>` and resolves to the exit code. Never exits the process itself. */
export async function runCli(argv: readonly string[], context: CliContext): Promise<number> {
  const found = findCommand(argv);
  if (found === undefined) return topLevel(argv, context);
  const { command, rest } = found;
  try {
    const options = {
      help: { type: 'boolean', short: 'h' },
      ...(command.remote ? REMOTE_OPTIONS : {}),
      ...command.options,
    } as const;
    const { values, positionals } = parseArgs({
      args: joinNegativeValues(rest, options),
      options,
      allowPositionals: true,
      strict: true,
    });
    if (values.help) {
      context.stdout.write(commandHelp(command));
      return EXIT.ok;
    }
    return await command.run({ values, positionals, context });
  } catch (error) {
    return report(command, error, context);
  }
}

/**
 * `--delay -5` as `--delay=-5`: parseArgs takes a value that starts with a dash for an option
 * ("argument is ambiguous"); joined, the flag's own check says what range it takes.
 */
function joinNegativeValues(
  args: readonly string[],
  options: Readonly<Record<string, { type: string }>>,
): string[] {
  const joined: string[] = [];
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] as string;
    const next = args[index + 1];
    const name = arg.startsWith('--') && !arg.includes('=') ? arg.slice(2) : undefined;
    if (
      name !== undefined &&
      Object.hasOwn(options, name) &&
      options[name]?.type === 'string' &&
      next !== undefined &&
      /^-\d/.test(next)
    ) {
      joined.push(`${arg}=${next}`);
      index += 1;
    } else {
      joined.push(arg);
    }
  }
  return joined;
}

/** The command whose words start argv (`queue create` before `queue`), and the rest. */
function findCommand(argv: readonly string[]) {
  const byLength = [...COMMANDS].sort((a, b) => b.name.length - a.name.length);
  for (const command of byLength) {
    const words = command.name.split(' ');
    if (words.every((word, index) => argv[index] === word)) {
      return { command, rest: argv.slice(words.length) };
    }
  }
  return undefined;
}

function topLevel(argv: readonly string[], context: CliContext): number {
  const [first] = argv;
  if (first === '--version' || first === '-v') {
    context.stdout.write(`${VERSION}\n`);
    return EXIT.ok;
  }
  if (first === 'help' && argv.length > 1) {
    // `leaseq help publish` is `leaseq publish --help`.
    const found = findCommand(argv.slice(1));
    if (found === undefined) {
      // `leaseq help queue` is `leaseq queue --help`: the commands of the group.
      const group = argv.length === 2 ? groupOf(argv[1] as string) : [];
      if (group.length > 0) {
        context.stdout.write(groupHelp(argv[1] as string, group));
        return EXIT.ok;
      }
      return unknownCommand(argv.slice(1), context);
    }
    // The command is known: a word after it is not part of its name (`help queue create x`).
    if (found.rest.length > 0) {
      const name = found.command.name;
      context.stderr.write(
        `leaseq help ${name}: unexpected argument ${JSON.stringify(found.rest[0])}; see leaseq help ${name}\n`,
      );
      return EXIT.usage;
    }
    context.stdout.write(commandHelp(found.command));
    return EXIT.ok;
  }
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    context.stdout.write(overview());
    return EXIT.ok;
  }
  return unknownCommand(argv, context);
}

/** No command starts `argv`: the commands of its first word, or the overview's pointer. */
function unknownCommand(argv: readonly string[], context: CliContext): number {
  const [first, second] = argv;
  const group = groupOf(first as string);
  // Asked for (`leaseq queue --help`): the commands of the group, not a mistake.
  if (group.length > 0 && (second === '--help' || second === '-h')) {
    context.stdout.write(groupHelp(first as string, group));
    return EXIT.ok;
  }
  const names = group.map((c) => c.name).join(', ');
  context.stderr.write(
    group.length === 0
      ? `leaseq: unknown command ${JSON.stringify(first)}; see leaseq --help\n`
      : second === undefined || second.startsWith('-')
        ? `leaseq ${first}: which one? ${names}\n`
        : `leaseq: unknown command ${JSON.stringify(`${first} ${second}`)}; the ${first} commands are ${names}\n`,
  );
  return EXIT.usage;
}

/** The commands whose first word is `word` (`queue`: queue create, queue update …). */
function groupOf(word: string): Command[] {
  return COMMANDS.filter((command) => command.name.startsWith(`${word} `));
}

/** The commands of a group with their summaries, as the overview lists them. */
function groupHelp(word: string, group: readonly Command[]): string {
  const width = Math.max(...group.map((command) => command.name.length));
  return [
    `leaseq ${word} — its commands`,
    '',
    `usage: leaseq ${word} <command> [options]     leaseq ${word} <command> --help`,
    '',
    ...group.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    '',
  ].join('\n');
}

function report(command: Command, error: unknown, context: CliContext): number {
  const prefix = `leaseq ${command.name}:`;
  if (error instanceof UsageError || isParseArgsError(error)) {
    context.stderr.write(
      `${prefix} ${(error as Error).message}\nsee leaseq ${command.name} --help\n`,
    );
    return EXIT.usage;
  }
  // Where the command stands: the jobs a redrive or move took before the error (R20).
  const done = doneBefore(error);
  const after = done === undefined ? '' : `${done}\n`;
  if (
    error instanceof LeaseqError ||
    error instanceof RemoteError ||
    error instanceof ConnectionLostError
  ) {
    // What to do, in the CLI's terms: the server's message names HTTP headers.
    const hint = command.remote ? hintFor(error.code, answeredByServer(error)) : undefined;
    context.stderr.write(
      `${prefix} ${error.code}: ${error.message}\n${after}${hint === undefined ? '' : `(${hint})\n`}`,
    );
    return EXIT.failed;
  }
  context.stderr.write(
    `${prefix} ${error instanceof Error ? error.message : String(error)}\n${after}`,
  );
  return EXIT.failed;
}

function isParseArgsError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS');
}

function commandHelp(command: Command): string {
  // A blank line between the command's own lines and the remote options, when it has some.
  const remote = command.remote
    ? [...(command.details.length > 0 ? [''] : []), ...remoteDetails(command)]
    : [];
  const details = [...command.details, ...remote];
  return [
    `leaseq ${command.name} — ${command.summary}`,
    '',
    `usage: leaseq ${command.name} ${command.usage}`.trimEnd(),
    ...(details.length > 0 ? ['', ...details] : []),
    '',
  ].join('\n');
}

function overview(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length));
  return [
    `leaseq ${VERSION} — a job queue built on visibility leases`,
    '',
    'usage: leaseq <command> [options]     leaseq <command> --help     leaseq --version',
    '',
    ...COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    '',
    'Commands other than serve and secret rotate talk to a server: --server URL or',
    'LEASEQ_SERVER (default http://127.0.0.1:7700), --api-key KEY or LEASEQ_API_KEY, --json for',
    'scripts. serve and secret rotate work on the storage itself (--storage).',
    '',
    '--json: publish, ack, nack, extend and cancel print JSON Lines, one object per input, in',
    'order. ack, nack, extend and cancel do each input on its own and print a refused one as',
    '{…, "error": {"code", "message"}} (exit code 1; the others are done all the same); a batch',
    'of publish is all or nothing (refused: said on stderr, exit code 1). receive, job, queue',
    'list, queue stats, schedule list and dead list print one JSON document, of one shape',
    'whatever the flags (dead list: {"deadLetters", "next"}, next null on the last page), but',
    'for receive --auto-ack: its deliveries have no receipt or deadline to settle them by; the',
    'other commands one JSON object. An error of a whole command goes to stderr as text.',
    '',
  ].join('\n');
}
