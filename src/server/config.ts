import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { ValidationError } from '../core/index.js';
import { DEFAULT_URL, redactUrl, storageUrlProblem } from '../engine/index.js';
import { ACTIONS, type ApiKeyConfig } from './auth.js';
import { DEFAULT_LIMITS, type Limits, REQUEST_TIMEOUT_MARGIN_MS } from './limits.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Everything `leaseq serve` can be told. Sizes in bytes, times in milliseconds. */
export interface ServerConfig extends Limits {
  /** Default 127.0.0.1. Without keys only a loopback address is allowed. */
  host: string;
  /** Default 7700; 0 picks a free port. */
  port: number;
  /** The engine URL: memory:, sqlite:path or postgres://…  Default sqlite:./data/leaseq.db. */
  storage: string;
  /** SQLite: fsync (default) or os. */
  durability: 'fsync' | 'os';
  /** At least 32 characters. Absent: the secret kept in the storage (docs/operations.md). */
  receiptSecret?: string;
  /** API keys. Default none: every request is allowed, so `host` must be a loopback address. */
  keys: ApiKeyConfig[];
  /** Default info. */
  logLevel: LogLevel;
  /** How long shutdown waits for requests in flight before cutting them. Default 10 s. */
  shutdownTimeoutMs: number;
  /** Serve the web dashboard at /ui/. Default true. */
  ui: boolean;
  /** The SQS endpoint (docs/sqs.md): off (default) or on. */
  sqs: 'off' | 'on';
  /** What SQS QueueUrls start with. Absent: from each request's Host header. */
  sqsBaseUrl?: string;
  /** The region in SQS ARNs. Default us-east-1. */
  sqsRegion: string;
  /** The account id in SQS QueueUrls and ARNs. Default 000000000000. */
  sqsAccountId: string;
  /** DeleteMessage with an expired handle of a message that still exists: refuse (default) or ignore. */
  sqsStaleReceipts: 'refuse' | 'ignore';
}

/** What a setting's value must be, and how it is read from text (flags, environment). */
export type SettingKind =
  | {
      /** A safe integer from `min` to `max`; as text, decimal digits. */
      type: 'integer';
      /** The smallest value allowed. */
      min: number;
      /** The largest value allowed. */
      max: number;
    }
  | {
      /** A string. */
      type: 'string';
      /** The fewest characters allowed. Default 0. */
      minLength?: number;
    }
  | {
      /** One of `values`. */
      type: 'enum';
      /** The values allowed. */
      values: readonly string[];
    }
  | {
      /** true or false; as text, also on, off, 1 or 0, in any case. */
      type: 'boolean';
    }
  | {
      /** API keys: an array of ApiKeyConfig; as text, its JSON. */
      type: 'keys';
    }
  | {
      /** A storage URL of an engine, not of a server. */
      type: 'storage';
    }
  | {
      /** A string `pattern` matches. */
      type: 'pattern';
      /** What the value must match. */
      pattern: RegExp;
      /** What a value of the pattern is, for messages (`a region such as us-east-1`). */
      form: string;
    }
  | {
      /** An http(s) URL without a query, fragment, credentials or trailing `/`. */
      type: 'baseUrl';
    };

/** One setting of `leaseq serve`: its name, what its value must be, and its help line. */
export interface Setting {
  /** Its name in a config file; its flag and environment variable derive from it. */
  name: keyof ServerConfig;
  /** What its value must be. */
  kind: SettingKind;
  /** What it sets, in a few words, for `leaseq serve --help`. */
  help: string;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const int = (min: number, max = MAX_SAFE): SettingKind => ({ type: 'integer', min, max });

/** Every setting, by the name a config file uses. Flags and environment derive from it. */
export const SETTINGS: readonly Setting[] = [
  {
    name: 'host',
    // An address or name as listen takes it: one in a URL's form (`[::1]`, `127.0.0.1:7700`)
    // would fail to resolve at start, and `[::1]` be said not to be loopback.
    kind: {
      type: 'pattern',
      pattern:
        /^(?:[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?|[0-9a-f.]*:[0-9a-f.]*:[0-9a-f:.]*(?:%[\w.-]+)?)$/i,
      form: 'an IP address or host name, without brackets or a port (::1, not [::1])',
    },
    help: 'address to listen on',
  },
  { name: 'port', kind: int(0, 65535), help: 'port to listen on (0: any free port)' },
  { name: 'storage', kind: { type: 'storage' }, help: 'engine URL' },
  {
    name: 'durability',
    kind: { type: 'enum', values: ['fsync', 'os'] },
    help: 'SQLite durability',
  },
  {
    name: 'receiptSecret',
    kind: { type: 'string', minLength: 32 },
    help: 'key receipts are signed with (≥ 32 characters; none: a secret kept in the storage)',
  },
  { name: 'keys', kind: { type: 'keys' }, help: 'API keys, a JSON array (see docs/operations.md)' },
  { name: 'logLevel', kind: { type: 'enum', values: LOG_LEVELS }, help: 'log level' },
  {
    name: 'maxPayloadBytes',
    kind: int(1, 64 * 1024 * 1024),
    help: 'largest job payload (bytes of JSON)',
  },
  { name: 'maxBodyBytes', kind: int(1024, 256 * 1024 * 1024), help: 'largest request body' },
  { name: 'maxBatch', kind: int(1, 10_000), help: 'most entries in one batch' },
  { name: 'maxWaitMs', kind: int(0, 300_000), help: 'longest long-poll wait' },
  {
    name: 'headersTimeoutMs',
    kind: int(100, 300_000),
    help: 'time a client has to send request headers; then 408',
  },
  { name: 'maxLongPolls', kind: int(1, 1_000_000), help: 'most waiting receives at once' },
  { name: 'maxVisibilityMs', kind: int(1), help: 'longest lease a request may ask for' },
  { name: 'maxDelayMs', kind: int(0), help: 'longest publish or nack delay' },
  { name: 'maxJsonDepth', kind: int(1, 10_000), help: 'deepest nesting in a request body' },
  {
    name: 'maxSubscriptions',
    kind: int(1, 100_000),
    help: 'most subscriptions of one stream connection',
  },
  { name: 'maxPrefetch', kind: int(1, 100_000), help: 'largest prefetch of one subscription' },
  {
    name: 'maxStreamBufferBytes',
    kind: int(64 * 1024, 1024 * 1024 * 1024),
    help: 'most unsent bytes queued for one stream connection',
  },
  { name: 'streamHeartbeatMs', kind: int(100, 600_000), help: 'stream ping interval' },
  { name: 'shutdownTimeoutMs', kind: int(0, 3_600_000), help: 'wait for requests in flight' },
  {
    name: 'ui',
    kind: { type: 'boolean' },
    help: 'serve the web dashboard at /ui/ (true or false)',
  },
  { name: 'sqs', kind: { type: 'enum', values: ['off', 'on'] }, help: 'the SQS endpoint' },
  {
    name: 'sqsBaseUrl',
    kind: { type: 'baseUrl' },
    help: 'start of SQS QueueUrls (none: from the Host header)',
  },
  // The forms SDKs expect in QueueUrls and ARNs: a region as AWS writes them, 12 digits.
  {
    name: 'sqsRegion',
    kind: {
      type: 'pattern',
      pattern: /^[a-z]{2}(-[a-z]+)+-\d+$/,
      form: 'a region such as us-east-1',
    },
    help: 'region in SQS ARNs',
  },
  {
    name: 'sqsAccountId',
    kind: { type: 'pattern', pattern: /^\d{12}$/, form: 'an account id of 12 digits' },
    help: 'account id in SQS URLs',
  },
  {
    name: 'sqsStaleReceipts',
    kind: { type: 'enum', values: ['refuse', 'ignore'] },
    help: 'DeleteMessage with an expired handle',
  },
];

/** The value of each setting where no source gives one; the limits are DEFAULT_LIMITS. */
export const DEFAULT_CONFIG: Readonly<Omit<ServerConfig, 'receiptSecret' | 'sqsBaseUrl'>> = {
  host: '127.0.0.1',
  port: 7700,
  storage: DEFAULT_URL,
  durability: 'fsync',
  keys: [],
  logLevel: 'info',
  shutdownTimeoutMs: 10_000,
  ui: true,
  sqs: 'off',
  sqsRegion: 'us-east-1',
  sqsAccountId: '000000000000',
  sqsStaleReceipts: 'refuse',
  ...DEFAULT_LIMITS,
};

/** `maxPayloadBytes` → `--max-payload-bytes`. */
export function flagName(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
}

/** `maxPayloadBytes` → `LEASEQ_MAX_PAYLOAD_BYTES`. */
export function envName(name: string): string {
  return `LEASEQ_${flagName(name).replaceAll('-', '_').toUpperCase()}`;
}

/** Where `loadConfig` reads settings from; each may be left out. */
export interface ConfigSources {
  /** Flag values by setting name (strings, as typed). */
  flags?: Partial<Record<string, string>>;
  /** Environment variables by name (as `process.env`): `LEASEQ_PORT` sets `port`. */
  env?: Partial<Record<string, string>>;
  /** A JSON config file's text and its path (for messages). */
  file?: {
    /** Where the file is, as messages name it. */
    path: string;
    /** Its text: a JSON object of settings by name. */
    text: string;
  };
}

/**
 * The server's configuration: defaults, then the file, then the environment, then flags.
 * Every problem is reported at once, each naming the setting and where its value came from.
 */
export function loadConfig(sources: ConfigSources): ServerConfig {
  const wrong = sourcesProblems(sources);
  if (wrong.length > 0) throw new ValidationError(wrong);
  const problems: string[] = [];
  const config: Record<string, unknown> = { ...DEFAULT_CONFIG };
  const fileValues = readFile(sources.file, problems);
  // A flag the command line cannot give (an embedding process passes flags by setting name):
  // dropped in silence, the setting would keep its default.
  for (const [name, value] of Object.entries(sources.flags ?? {})) {
    if (value !== undefined && !SETTING_NAMES.has(name))
      problems.push(unknownSetting(name, 'flags'));
  }
  /** Where each setting given was given (the last that counts). */
  const given = new Map<string, string>();
  /** Settings a source gave a value of the wrong form: reported, and kept out of crossChecks. */
  const refused = new Set<string>();
  for (const setting of SETTINGS) {
    const candidates: [unknown, string, boolean][] = [
      [fileValues[setting.name], sources.file?.path ?? '', false],
      [sources.env?.[envName(setting.name)], envName(setting.name), true],
      [sources.flags?.[setting.name], `--${flagName(setting.name)}`, true],
    ];
    for (const [raw, origin, fromText] of candidates) {
      if (raw === undefined) continue;
      const parsed = parseValue(setting.kind, raw, fromText);
      if (parsed.ok) {
        config[setting.name] = parsed.value;
        given.set(setting.name, origin);
      } else {
        problems.push(`${setting.name}: ${parsed.problem} (from ${origin})`);
        refused.add(setting.name);
      }
    }
  }
  problems.push(...crossChecks(config as unknown as ServerConfig, given, refused));
  if (problems.length > 0) throw new ValidationError(problems);
  return config as unknown as ServerConfig;
}

/**
 * `createApp`'s keys checked as `loadConfig` checks them, and its limits by name and range, every
 * problem at once: an app built in code, without a config, is refused a short key, a misspelt
 * field or limit, a limit out of range, rather than served with a key that can never match.
 */
export function checkAppOptions(options: { keys?: unknown; limits?: unknown }): void {
  const problems: string[] = [];
  if (options.keys !== undefined) {
    const parsed = parseKeys(options.keys, false);
    if (!parsed.ok) problems.push(`keys: ${parsed.problem}`);
  }
  const { limits } = options;
  if (limits !== undefined) {
    const prototype =
      typeof limits === 'object' && limits !== null && Object.getPrototypeOf(limits);
    if (prototype !== Object.prototype && prototype !== null) {
      problems.push('limits must be a plain object of limits by name');
    } else {
      for (const [name, value] of Object.entries(limits as object)) {
        const problem = limitProblem(name, value);
        if (problem !== undefined) problems.push(problem);
      }
    }
  }
  if (problems.length > 0) throw new ValidationError(problems);
}

/**
 * A limit given in code: in the range `serve` takes, but that a size in bytes may be smaller
 * (tests of frame splitting use a few KiB).
 */
function limitProblem(name: string, value: unknown): string | undefined {
  const kind = SETTINGS.find((setting) => setting.name === name)?.kind;
  if (kind?.type !== 'integer' || !Object.hasOwn(DEFAULT_LIMITS, name)) {
    return `limits: ${JSON.stringify(name)} is not a limit`;
  }
  if (value === undefined) return undefined;
  const least = name.endsWith('Bytes') ? 1 : kind.min;
  return Number.isSafeInteger(value) && (value as number) >= least && (value as number) <= kind.max
    ? undefined
    : `limits.${name} must be an integer from ${least} to ${kind.max}, got ${show(value)}`;
}

function readFile(file: ConfigSources['file'], problems: string[]): Record<string, unknown> {
  if (file === undefined) return {};
  let parsed: unknown;
  // A byte order mark, as some editors save UTF-8, is not part of the JSON.
  const text = file.text.replace(/^\uFEFF/, '');
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const { message } = error as Error;
    const line = errorLine(message, text);
    problems.push(
      `config file ${file.path} is not JSON: ${withoutExcerpt(message)}${line === undefined ? '' : ` (line ${line})`}`,
    );
    return {};
  }
  if (!isRecord(parsed)) {
    problems.push(`config file ${file.path} must hold a JSON object`);
    return {};
  }
  for (const key of Object.keys(parsed)) {
    if (!SETTING_NAMES.has(key)) problems.push(unknownSetting(key, file.path));
  }
  return parsed;
}

const SETTING_NAMES: ReadonlySet<string> = new Set(SETTINGS.map((setting) => setting.name));

/** An unknown name, with the setting it is the flag or environment form of, if any. */
function unknownSetting(name: string, where: string): string {
  const meant = SETTINGS.find(
    (setting) => flagName(setting.name) === name || envName(setting.name) === name,
  );
  const hint = meant === undefined ? '' : ` (settings go by name here: ${meant.name})`;
  return `unknown setting ${JSON.stringify(name)} in ${where}${hint}`;
}

const SOURCES = new Set(['flags', 'env', 'file']);

/**
 * Sources not of the shape `ConfigSources` names (an embedding process's mistake), each refused by
 * name: a misspelt source (`flag`) would be read as no source at all, its settings left at their
 * defaults, and a `file` given as the file's text failed untyped. A value is described by its type
 * alone: a config file's text holds the receipt secret and keys.
 */
function sourcesProblems(sources: unknown): string[] {
  if (!isRecord(sources)) {
    return [`loadConfig takes an object { flags?, env?, file? }, got ${kindOf(sources)}`];
  }
  const problems = Object.keys(sources)
    .filter((key) => !SOURCES.has(key))
    .map((key) => `unknown source ${JSON.stringify(key)}: loadConfig reads flags, env and file`);
  for (const name of ['flags', 'env'] as const) {
    const value = sources[name];
    // null, as undefined, is no source (what it was before sources were checked).
    if (value !== undefined && value !== null && !isRecord(value)) {
      problems.push(`${name} must be an object of values by name, got ${kindOf(value)}`);
    }
  }
  const { file } = sources;
  if (
    file !== undefined &&
    !(isRecord(file) && typeof file.path === 'string' && typeof file.text === 'string')
  ) {
    problems.push(
      `file must be { path, text }: the config file's path (as messages name it) and its text, got ${kindOf(file)}`,
    );
  }
  return problems;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object of another shape';
  return `a value of type ${typeof value}`;
}

/**
 * A JSON syntax error's message without the text V8 quotes around an unexpected token: a config
 * file holds the receipt secret and API keys, and its errors go to logs.
 */
function withoutExcerpt(message: string): string {
  return message.replace(/, (?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s, '');
}

/**
 * The line of `text` a JSON syntax error is on: from the position V8 gives, or, where it gives
 * none (an unexpected token), from where the text it quotes stands. Undefined when not known.
 */
function errorLine(message: string, text: string): number | undefined {
  let position: number | undefined;
  const at = /at position (\d+)/.exec(message);
  if (at !== null) {
    position = Number(at[1]);
  } else {
    const quoted = /^Unexpected token '(.)', (\.\.\.)?"(.*)"(?:\.\.\.)? is not valid JSON$/s.exec(
      message,
    );
    const [, token = '', cut, excerpt = ''] = quoted ?? [];
    const start = quoted === null ? -1 : text.indexOf(excerpt);
    // A cut excerpt starts about ten characters before the token.
    if (start >= 0)
      position = start + Math.max(0, excerpt.indexOf(token, cut === undefined ? 0 : 10));
  }
  return position === undefined ? undefined : text.slice(0, position).split('\n').length;
}

type Parsed = { ok: true; value: unknown } | { ok: false; problem: string };

const ok = (value: unknown): Parsed => ({ ok: true, value });
const problem = (text: string): Parsed => ({ ok: false, problem: text });

const BOOLEAN_WORDS: Record<string, boolean> = {
  true: true,
  on: true,
  '1': true,
  false: false,
  off: false,
  '0': false,
};

/** Flags and environment give text; a config file gives JSON values. */
function parseValue(kind: SettingKind, raw: unknown, fromText: boolean): Parsed {
  switch (kind.type) {
    case 'integer': {
      const value = fromText && typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
      const fits =
        typeof value === 'number' &&
        Number.isSafeInteger(value) &&
        value >= kind.min &&
        value <= kind.max;
      return fits
        ? ok(value)
        : problem(`must be an integer from ${kind.min} to ${kind.max}, got ${show(raw)}`);
    }
    case 'string':
      return typeof raw === 'string' && raw.length >= (kind.minLength ?? 0)
        ? ok(raw)
        : problem(`must be a string of at least ${kind.minLength ?? 0} characters`);
    case 'enum':
      return typeof raw === 'string' && kind.values.includes(raw)
        ? ok(raw)
        : problem(`must be one of ${kind.values.join(', ')}, got ${show(raw)}`);
    case 'boolean': {
      const value = fromText && typeof raw === 'string' ? BOOLEAN_WORDS[raw.toLowerCase()] : raw;
      // The words are for text (flags, environment); a file has JSON's own true and false.
      const words = fromText ? 'or on, off, 1, 0' : 'JSON true or false, without quotes';
      return typeof value === 'boolean'
        ? ok(value)
        : problem(`must be true or false (${words}), got ${show(raw)}`);
    }
    case 'keys':
      return parseKeys(raw, fromText);
    case 'storage': {
      const wrong = storageUrlProblem(raw, { servers: false });
      return wrong === undefined ? ok(raw) : problem(wrong);
    }
    case 'pattern':
      return typeof raw === 'string' && kind.pattern.test(raw)
        ? ok(raw)
        : problem(`must be ${kind.form}, got ${show(raw)}`);
    case 'baseUrl':
      return baseUrlProblem(raw);
  }
}

/** QueueUrls are this and `/sqs/<account>/<name>`: an http(s) origin, maybe with a path. */
function baseUrlProblem(raw: unknown): Parsed {
  const url = typeof raw === 'string' && URL.canParse(raw) ? new URL(raw) : undefined;
  const fits =
    url !== undefined &&
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    url.host !== '' &&
    url.username === '' &&
    url.password === '' &&
    url.search === '' &&
    url.hash === '' &&
    !(raw as string).endsWith('/');
  return fits
    ? ok(raw)
    : problem(
        `must be an http(s) URL without a query, fragment, credentials or trailing /, e.g. https://queues.example.com, got ${show(typeof raw === 'string' ? redactUrl(raw) : raw)}`,
      );
}

function parseKeys(raw: unknown, fromText: boolean): Parsed {
  let value = raw;
  if (fromText && typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      return problem('must be a JSON array of keys');
    }
  }
  if (!Array.isArray(value)) return problem('must be an array of keys');
  // By index: an array with holes (`[, key]`) has an undefined where a key should be.
  const problems = Array.from(value, (key, index) => keyProblems(key, `[${index}]`)).flat();
  if (problems.length === 0) problems.push(...sharedKeyProblems(value as ApiKeyConfig[]));
  return problems.length > 0 ? problem(problems.join('; ')) : ok(value);
}

/**
 * Two keys with one secret (given as a key or as its sha256) are one key to the server, which
 * would only ever find the first: the other's rights would be silently out of reach. Two keys of
 * one name could not be told apart in logs and metrics.
 */
function sharedKeyProblems(keys: readonly ApiKeyConfig[]): string[] {
  const problems: string[] = [];
  const bySecret = new Map<string, number>();
  const byName = new Map<string, number>();
  keys.forEach((key, index) => {
    const digest = (
      key.sha256 ??
      createHash('sha256')
        .update(key.key ?? '')
        .digest('hex')
    ).toLowerCase();
    const sameSecret = bySecret.get(digest);
    if (sameSecret !== undefined) {
      problems.push(`[${index}] has the same secret as [${sameSecret}]: give each key its own`);
    } else bySecret.set(digest, index);
    const sameName = byName.get(key.name);
    if (sameName !== undefined) {
      problems.push(`[${index}].name ${JSON.stringify(key.name)} is the name of [${sameName}] too`);
    } else byName.set(key.name, index);
  });
  return problems;
}

/** What `Authorization: Bearer <key>` can carry intact: visible ASCII, no whitespace. */
const BEARER_TOKEN = /^[!-~]+$/;

function keyProblems(key: unknown, at: string): string[] {
  if (!isRecord(key)) return [`${at} must be an object`];
  const { name, key: secret, sha256, allow, ...rest } = key;
  const problems = Object.keys(rest).map(
    (field) => `${at} has an unknown field ${JSON.stringify(field)}`,
  );
  if (typeof name !== 'string' || name.length === 0)
    problems.push(`${at}.name must be a non-empty string`);
  if ((secret === undefined) === (sha256 === undefined)) {
    problems.push(`${at} needs exactly one of key and sha256`);
  } else if (secret !== undefined && (typeof secret !== 'string' || secret.length < 16)) {
    problems.push(`${at}.key must be a string of at least 16 characters`);
  } else if (typeof secret === 'string' && !BEARER_TOKEN.test(secret)) {
    problems.push(
      `${at}.key must be printable ASCII without spaces (letters, digits and punctuation), as an Authorization: Bearer header carries it`,
    );
  } else if (
    sha256 !== undefined &&
    (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(sha256))
  ) {
    problems.push(`${at}.sha256 must be 64 hex digits`);
  }
  if (!Array.isArray(allow) || allow.length === 0) {
    problems.push(`${at}.allow must be a non-empty array of { queues, actions }`);
  } else {
    allow.forEach((grant, index) => {
      problems.push(...grantProblems(grant, `${at}.allow[${index}]`));
    });
  }
  return problems;
}

function grantProblems(grant: unknown, at: string): string[] {
  if (typeof grant !== 'object' || grant === null) return [`${at} must be an object`];
  const { queues, actions, ...rest } = grant as Record<string, unknown>;
  const problems = Object.keys(rest).map(
    (field) => `${at} has an unknown field ${JSON.stringify(field)}`,
  );
  if (typeof queues !== 'string' || !/^[A-Za-z0-9_.*-]{1,80}$/.test(queues)) {
    problems.push(`${at}.queues must be a queue name pattern (letters, digits, _ . - and *)`);
  }
  if (
    !Array.isArray(actions) ||
    actions.length === 0 ||
    !actions.every((action) => (ACTIONS as readonly unknown[]).includes(action))
  ) {
    problems.push(`${at}.actions must be a non-empty array of ${ACTIONS.join(', ')}`);
  }
  return problems;
}

/**
 * Checks of settings against each other. One whose setting was refused is left out: it would
 * judge the default in its place (keys refused would read as no keys configured at all).
 */
function crossChecks(
  config: ServerConfig,
  given: ReadonlyMap<string, string>,
  refused: ReadonlySet<string>,
): string[] {
  const problems: string[] = [];
  const durability = given.get('durability');
  // Given for a storage it does not apply to, it would be dropped in silence (the library
  // refuses the same). A storage refused leaves an earlier source's in its place: not judged.
  if (
    durability !== undefined &&
    !refused.has('storage') &&
    !config.storage.startsWith('sqlite:')
  ) {
    problems.push(
      `durability: applies to SQLite storage only, and storage is ${redactUrl(config.storage)} (from ${durability})`,
    );
  }
  // Where each value came from, a setting left out included: the one to change may not be the
  // one the problem is named after.
  const from = (name: string) => given.get(name) ?? 'the default';
  if (
    config.keys.length === 0 &&
    !refused.has('keys') &&
    !refused.has('host') &&
    !isLoopback(config.host)
  ) {
    problems.push(
      `host: ${config.host} is not a loopback address and no API keys are configured; configure keys or listen on 127.0.0.1 (from ${from('host')})`,
    );
  }
  if (
    !refused.has('maxBodyBytes') &&
    !refused.has('maxPayloadBytes') &&
    config.maxBodyBytes < config.maxPayloadBytes + 1024
  ) {
    problems.push(
      `maxBodyBytes: ${config.maxBodyBytes} (from ${from('maxBodyBytes')}) must be at least maxPayloadBytes + 1024 (${config.maxPayloadBytes + 1024}; maxPayloadBytes ${config.maxPayloadBytes} from ${from('maxPayloadBytes')}) so that one job of the largest payload fits`,
    );
  }
  const requestTimeout = config.maxWaitMs + REQUEST_TIMEOUT_MARGIN_MS;
  if (
    !refused.has('headersTimeoutMs') &&
    !refused.has('maxWaitMs') &&
    config.headersTimeoutMs > requestTimeout
  ) {
    problems.push(
      `headersTimeoutMs: ${config.headersTimeoutMs} (from ${from('headersTimeoutMs')}) must be at most maxWaitMs + ${REQUEST_TIMEOUT_MARGIN_MS} (${requestTimeout}; maxWaitMs ${config.maxWaitMs} from ${from('maxWaitMs')}), the time a whole request may take`,
    );
  }
  return problems;
}

/**
 * 127.0.0.0/8, ::1 and localhost, in any spelling listen takes: `LOCALHOST`, `127.1`,
 * `0:0:0:0:0:0:0:1`, and 127.0.0.0/8 mapped to IPv6 (`::ffff:127.0.0.1`).
 */
export function isLoopback(host: string): boolean {
  const url = `http://${host.includes(':') ? `[${host}]` : host}/`;
  if (!URL.canParse(url)) return false;
  // The URL parser writes each address one way: `localhost`, `127.0.0.1`, `[::ffff:7f00:1]`.
  const { hostname } = new URL(url);
  if (hostname === 'localhost') return true;
  if (isIP(hostname) === 4) return hostname.startsWith('127.');
  return hostname === '[::1]' || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(hostname);
}

function show(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : String(value);
}
