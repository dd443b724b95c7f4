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
    'the storage) ends it at once. Logs are JSON lines on stdout.',
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
    const server = await startServer(config, {
      logDestination: context.stdout as unknown as DestinationStream,
    });
    context.started?.();
    await stopped(context.stop);
    await server.close();
    return EXIT.ok;
  },
};

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

function stopped(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
