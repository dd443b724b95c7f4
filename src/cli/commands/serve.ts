import { readFile } from 'node:fs/promises';
import type { DestinationStream } from 'pino';
import { ValidationError } from '../../core/index.js';
import {
  type ConfigSources,
  DEFAULT_CONFIG,
  envName,
  flagName,
  loadConfig,
  SETTINGS,
  startServer,
} from '../../server/index.js';
import {
  type CliContext,
  type Command,
  EXIT,
  type OptionsConfig,
  type Output,
  UsageError,
  type Values,
} from '../command.js';
import { positionals, stringFlag } from '../flags.js';

const options: OptionsConfig = {
  config: { type: 'string' },
  ...Object.fromEntries(SETTINGS.map((setting) => [flagName(setting.name), { type: 'string' }])),
};

const defaultOf = (name: string) => {
  const value = (DEFAULT_CONFIG as Record<string, unknown>)[name];
  return value === undefined ? 'none' : JSON.stringify(value);
};

/** Columns of the settings table in --help: as wide as the longest flag and variable. */
const FLAG_WIDTH = Math.max(...SETTINGS.map((setting) => flagName(setting.name).length));
const ENV_WIDTH = Math.max(...SETTINGS.map((setting) => envName(setting.name).length));

export const serve: Command = {
  name: 'serve',
  summary: 'Run the HTTP server (default 127.0.0.1:7700 over sqlite:./data/leaseq.db)',
  usage: '[--config FILE] [--port N] [--host ADDR] [--storage URL] [...]',
  details: [
    'Every setting can come from a JSON config file (--config FILE or LEASEQ_CONFIG), the',
    'environment, or a flag, under the same name; flags win over the environment, which wins',
    'over the file. Stops cleanly on SIGTERM or SIGINT; one before it listens (while it opens',
    'the storage) ends it at once. Logs are JSON lines on stdout; a reader of them that goes',
    'away (| head) stops it as SIGTERM does, then it exits 141.',
    'Flags show in ps and /proc to every user of the machine: give secrets (--keys,',
    '--receipt-secret) in the environment or the config file, or keys by their sha256.',
    '',
    ...SETTINGS.map(
      (setting) =>
        `--${flagName(setting.name).padEnd(FLAG_WIDTH)} ${envName(setting.name).padEnd(ENV_WIDTH)} ${setting.help} (default ${defaultOf(setting.name)})`,
    ),
  ],
  options,
  remote: false,
  hearsStop: 'once-started',
  async run({ values, positionals: given, context }) {
    positionals(given, []);
    const sources = await configSources(values, context);
    let config: ReturnType<typeof loadConfig>;
    try {
      config = loadConfig(sources);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      context.stderr.write(
        `leaseq serve: invalid configuration:\n${error.issues.map((issue) => `  - ${issue}\n`).join('')}`,
      );
      return EXIT.usage;
    }
    // Its log lines are standard output. A reader of them that goes away (`| head -2`, a
    // `| pino-pretty` ended by the same Ctrl-C) or another failure of it (a full disk) stops the
    // server as SIGTERM does, cleanly, not in the middle of requests as for a command that has
    // nothing in flight; the lines logged from then on have nowhere to go. Heard here for as
    // long as the process lives: a line of the shutdown may fail after the server has closed.
    context.handleOutputErrors?.();
    const logs = new StdoutLog(context.stdout);
    const server = await startServer(config, {
      logDestination: logs as unknown as DestinationStream,
    });
    context.started?.();
    const cause = await stopped(context.stop, logs.failed);
    await server.close();
    // Stopped by a signal as asked: done, whatever became of the lines of the shutdown.
    if (cause === 'signal') return EXIT.ok;
    const failure = logs.failure as NodeJS.ErrnoException;
    if (failure.code === 'EPIPE') return EXIT.readerGone;
    context.stderr.write(`leaseq: cannot write standard output: ${failure.message}\n`);
    return EXIT.failed;
  },
};

/**
 * Standard output as the server's log destination: the first write that fails (its reader gone,
 * a full disk) is kept and aborts `failed`; nothing more is written after it.
 */
class StdoutLog {
  private readonly failing = new AbortController();
  failure: Error | undefined;

  constructor(private readonly output: Output) {}

  get failed(): AbortSignal {
    return this.failing.signal;
  }

  write(text: string): void {
    if (this.failure !== undefined) return;
    this.output.write(text, (error) => {
      if (!error || this.failure !== undefined) return;
      this.failure = error;
      this.failing.abort();
    });
  }
}

async function configSources(values: Values, context: CliContext): Promise<ConfigSources> {
  const flags: Record<string, string> = {};
  for (const setting of SETTINGS) {
    const value = stringFlag(values, flagName(setting.name));
    if (value !== undefined) flags[setting.name] = value;
  }
  const path = stringFlag(values, 'config') ?? context.env.LEASEQ_CONFIG;
  if (path === undefined) return { flags, env: context.env };
  try {
    return { flags, env: context.env, file: { path, text: await readFile(path, 'utf8') } };
  } catch (error) {
    throw new UsageError(`cannot read the config file ${path}: ${(error as Error).message}`);
  }
}

/** Whether a signal (`stop`) or a failure of the log output (`failed`) came first. */
function stopped(stop: AbortSignal, failed: AbortSignal): Promise<'signal' | 'output'> {
  return new Promise((resolve) => {
    if (stop.aborted) return resolve('signal');
    if (failed.aborted) return resolve('output');
    stop.addEventListener('abort', () => resolve('signal'), { once: true });
    failed.addEventListener('abort', () => resolve('output'), { once: true });
  });
}
