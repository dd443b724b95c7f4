import { homedir } from 'node:os';
import { UnsupportedError, ValidationError } from '../core/index.js';
import type { Engine } from './engine.js';
import {
  checkEngineOptions,
  checkOptionsOfEngine,
  type EngineOptions,
  redactUrl,
} from './engine-options.js';
import { MemoryEngine } from './memory/memory-engine.js';

/** Where the embedded default keeps its data. */
export const DEFAULT_URL = 'sqlite:./data/leaseq.db';

/**
 * Opens the storage a URL names: `memory:`, `sqlite:path/to.db` (the default,
 * `sqlite:./data/leaseq.db`) or `postgres://user@host:port/db`.
 */
export async function openEngine(
  url: string = DEFAULT_URL,
  options: EngineOptions = {},
): Promise<Engine> {
  const problem = storageUrlProblem(url);
  if (problem !== undefined || /^https?:\/\//i.test(url)) {
    throw new ValidationError(problem ?? `${redactUrl(url)} is a server: open it with open(url)`);
  }
  checkEngineOptions(options);
  checkOptionsOfEngine(url, options);
  if (url === 'memory:') return new MemoryEngine();
  if (url.startsWith('sqlite:')) {
    const { openSqliteEngine } = await loadDriver(
      'better-sqlite3',
      'SQLite',
      () => import('./sqlite/sqlite-engine.js'),
    );
    return openSqliteEngine(url.slice('sqlite:'.length), options);
  }
  // The one form left once storageUrlProblem said nothing: postgres:// or postgresql://.
  const { openPostgresEngine } = await loadDriver(
    'pg',
    'PostgreSQL',
    () => import('./postgres/postgres-engine.js'),
  );
  return openPostgresEngine(url, options);
}

/**
 * What is wrong with a storage URL as written, before anything is opened (the server's
 * configuration check says it with the other settings): undefined when its form is right.
 * `servers: false` is for a server's own storage, which cannot be another server.
 */
export function storageUrlProblem(
  url: unknown,
  {
    servers = true,
    memory = true,
  }: {
    /** false: a server URL is a problem (a server's own storage). Default true. */
    servers?: boolean;
    /** false: `memory:` is a problem, and not offered (what must outlive the process). Default true. */
    memory?: boolean;
  } = {},
): string | undefined {
  if (typeof url !== 'string') return `a storage URL must be a string, got ${typeof url}`;
  const engines = memory ? 'memory:, sqlite:path/to.db' : 'sqlite:path/to.db';
  const forms = servers
    ? `use ${engines}, postgres://… or a server http(s)://…`
    : `use ${engines} or postgres://…`;
  if (/^https?:\/\/./i.test(url)) {
    return servers
      ? undefined
      : `storage URL ${JSON.stringify(redactUrl(url))} names a leaseq server, and a server cannot store in another server: ${forms}`;
  }
  if (url === 'memory:') {
    return memory ? undefined : `memory: keeps nothing between processes: ${forms}`;
  }
  if (url.startsWith('sqlite://')) {
    // Not a path: `sqlite://x.db` would be /x.db, at the root of the file system.
    return `storage URL ${JSON.stringify(redactUrl(url))}: a SQLite URL is sqlite: and a path (sqlite:./x.db, sqlite:/abs/x.db), without //`;
  }
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path === '') return 'sqlite: needs a file path, e.g. sqlite:./data/leaseq.db';
    // No shell expands ~ after `sqlite:`, and SQLite takes it as a directory of that name in the
    // working directory: the database would not be where it was meant to be (and an `rm -r ~`
    // meant to remove it would empty the home directory).
    if (path.startsWith('~')) {
      const inFull = path.startsWith('~/') ? `, e.g. sqlite:${homedir()}${path.slice(1)}` : '';
      return `storage URL ${JSON.stringify(url)}: ~ is not expanded in a storage URL (SQLite would take it as a name in the working directory); write the path in full${inFull}`;
    }
    return undefined;
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    return URL.canParse(url)
      ? undefined
      : `storage URL ${JSON.stringify(redactUrl(url))} is not a valid URL (host, port 1 to 65535, database)`;
  }
  return `unsupported storage URL ${JSON.stringify(redactUrl(url))}: ${forms}`;
}

/**
 * The database drivers are optional peer dependencies: a user of the memory engine or of the
 * HTTP client installs neither. A missing one is named, with the command that installs it.
 */
export async function loadDriver<T>(
  driver: string,
  storage: string,
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = error instanceof Error ? error.message : '';
    if (code === 'ERR_MODULE_NOT_FOUND' && message.includes(`'${driver}'`)) {
      throw new UnsupportedError(
        `${storage} storage needs the ${driver} package: npm install ${driver}`,
        { cause: error },
      );
    }
    throw error;
  }
}

export { type EngineOptions, redactUrl } from './engine-options.js';
