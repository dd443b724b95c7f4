import { openRemote, type RemoteBroker } from '../client/index.js';
import { apiKeyProblem, serverUrlProblem } from '../wire/index.js';
import {
  type CliContext,
  type Command,
  type OptionsConfig,
  UsageError,
  type Values,
} from './command.js';
import { stringFlag } from './flags.js';

export const DEFAULT_SERVER = 'http://127.0.0.1:7700';

/** The options every command that reaches a server takes. */
export const REMOTE_OPTIONS: OptionsConfig = {
  server: { type: 'string' },
  'api-key': { type: 'string' },
  transport: { type: 'string' },
  json: { type: 'boolean' },
};

/** The help lines of REMOTE_OPTIONS, for `command`. */
export function remoteDetails(command: Pick<Command, 'overHttp'>): string[] {
  return [
    `--server URL     the leaseq server (env LEASEQ_SERVER, default ${DEFAULT_SERVER})`,
    '--api-key KEY    API key (env LEASEQ_API_KEY; prefer the environment: flags show in ps)',
    ...(command.overHttp
      ? [
          '--transport T    stream or http (env LEASEQ_TRANSPORT): the same here, as this command is',
          '                 HTTP requests on either (the stream carries operations and receives,',
          '                 not administration or lookups)',
        ]
      : [
          '--transport T    stream (one WebSocket, the default) or http (plain requests; env LEASEQ_TRANSPORT)',
        ]),
    '--json           machine-readable output (its forms: see leaseq --help)',
  ];
}

/** A client for the server the flags or environment name. */
export async function connect(values: Values, context: CliContext): Promise<RemoteBroker> {
  const flagServer = stringFlag(values, 'server');
  const server = flagServer ?? context.env.LEASEQ_SERVER ?? DEFAULT_SERVER;
  const problem = serverUrlProblem(server);
  // Named by where it came from: a value from the environment is not seen on the command line.
  if (problem !== undefined) {
    throw new UsageError(
      flagServer === undefined && context.env.LEASEQ_SERVER !== undefined
        ? `LEASEQ_SERVER: ${problem}`
        : problem,
    );
  }
  // A LEASEQ_API_KEY set but left blank is no key.
  const flagKey = stringFlag(values, 'api-key');
  const apiKey = flagKey ?? (context.env.LEASEQ_API_KEY || undefined);
  const keyProblem = apiKey === undefined ? undefined : apiKeyProblem(apiKey);
  if (keyProblem !== undefined) {
    throw new UsageError(
      `${flagKey === undefined ? 'LEASEQ_API_KEY' : '--api-key'} is not an API key: ${keyProblem}; a key is printable ASCII without spaces (letters, digits and punctuation)`,
    );
  }
  // A LEASEQ_TRANSPORT set but left blank is the default transport, as a blank key is no key.
  const flagTransport = stringFlag(values, 'transport');
  const transport = flagTransport ?? (context.env.LEASEQ_TRANSPORT || undefined);
  if (transport !== undefined && transport !== 'stream' && transport !== 'http') {
    throw new UsageError(
      `${flagTransport === undefined ? 'LEASEQ_TRANSPORT' : '--transport'} must be stream or http, got ${JSON.stringify(transport)}`,
    );
  }
  return openRemote(server, {
    ...(apiKey === undefined ? {} : { apiKey }),
    ...(transport === undefined ? {} : { transport }),
    ...(context.fetch === undefined ? {} : { fetch: context.fetch }),
  });
}

/** Runs `work` with a client, closing it afterwards. */
export async function withClient<T>(
  values: Values,
  context: CliContext,
  work: (client: RemoteBroker) => Promise<T>,
): Promise<T> {
  const client = await connect(values, context);
  try {
    return await work(client);
  } finally {
    await client.close();
  }
}

/** Writes one JSON document (or line) to standard output; `done` as for Output.write. */
export function printJson(
  context: CliContext,
  value: unknown,
  done?: (error?: Error | null) => void,
): void {
  context.stdout.write(`${JSON.stringify(value)}\n`, done);
}
