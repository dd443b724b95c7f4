import { ValidationError } from '../core/index.js';

/** Options of `openEngine`; one marked SQLite, given for another engine, is refused. */
export interface EngineOptions {
  /** SQLite: 'fsync' (publishes and acks synced before they return, the default) or 'os' (nothing synced: survives a process crash, not a power loss). */
  durability?: 'fsync' | 'os';
  /**
   * 'strict' (default): a `now` behind a queue's clock is a ClockError (R2), as in the core.
   * 'follow': on storage shared by processes, such a `now` is raised to the queue's clock —
   * another process's call committed first — so calls never fail for losing that race; and
   * concurrent reserves (or acks) of a queue merge into one statement whatever their `now`,
   * running at the latest of them. The Broker opens engines this way.
   */
  clockMode?: 'strict' | 'follow';
  /** SQLite: how long a call waits for another process's write lock, in ms. Default 5000. */
  busyTimeoutMs?: number;
  /**
   * SQLite, `durability: 'fsync'`: run the syncs of the WAL on libuv's thread pool, so that the
   * event loop goes on while the disk syncs, instead of blocking it. Calls are answered after
   * the same syncs either way. Where the loop serves connections (`leaseq serve` sets it), they
   * are read and answered meanwhile: the stream's publish-to-handler p99 is lower. Default
   * false: where the loop has nothing else to do, the hop to a thread and back (about 50 µs)
   * only adds to each sync.
   */
  syncOnThreadPool?: boolean;
}

/**
 * A URL fit for messages and logs: any password replaced, the one after the user name and
 * those given as parameters (`?password=…`, `sslpassword=…`, which PostgreSQL URLs take too),
 * also in a keyword/value connection string (`host=db password='…'`, libpq's other form), which
 * is refused with the text given in the message.
 */
export function redactUrl(url: string): string {
  return redactUserInfo(url)
    .replace(/([?&](?:ssl)?password=)[^&#]*/gi, '$1***')
    .replace(/((?:^|\s)(?:ssl)?password\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|\S*)/gi, '$1***');
}

/**
 * The password after the user name replaced. It ends at the last `@` before the query: drivers
 * take a password holding an unencoded `@` or `/` (`user:pa@ss@host`), and the first `@` would
 * leave the rest of it shown. An empty user name (`:secret@host`) has its password too. So has
 * a URL written without its scheme (`user:secret@host/db`), refused with the URL in the message.
 */
function redactUserInfo(url: string): string {
  const scheme =
    /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0] ?? (/^(sqlite|memory):/i.test(url) ? undefined : '');
  if (scheme === undefined) return url;
  const rest = url.slice(scheme.length);
  const at = passwordEnd(rest);
  const colon = rest.indexOf(':');
  if (at === -1 || colon === -1 || colon > at) return url;
  return `${scheme}${rest.slice(0, colon)}:***${rest.slice(at)}`;
}

/**
 * Where a password ends: at the last `@` before the query or fragment; where none is, at the
 * last `@` of all, so that a password holding an unencoded `?` or `#` (`user:pa#ss@host`, a URL
 * no driver takes, refused with it in the message) is not shown from there on. A host's port
 * followed by the path (`db:5432/jobs?note=a@b`) is no password: -1 then, as for none.
 */
function passwordEnd(rest: string): number {
  const queryAt = rest.search(/[?#]/);
  if (queryAt === -1) return rest.lastIndexOf('@');
  const before = rest.slice(0, queryAt).lastIndexOf('@');
  if (before !== -1) return before;
  return /^(\[[^\]]*\]|[^:/@]*)(:\d*)?(\/|$)/.test(rest) ? -1 : rest.lastIndexOf('@');
}

export function checkClockMode(mode: unknown): 'strict' | 'follow' {
  if (mode === undefined || mode === 'strict') return 'strict';
  if (mode === 'follow') return 'follow';
  throw new ValidationError(`clockMode must be 'strict' or 'follow', got ${JSON.stringify(mode)}`);
}

/**
 * Checks every option before anything is opened: a bad one must be refused before a database
 * file is created or a schema migrated, not after.
 */
export function checkEngineOptions(options: EngineOptions): void {
  const { durability, busyTimeoutMs, clockMode, syncOnThreadPool } = options;
  if (durability !== undefined && durability !== 'fsync' && durability !== 'os') {
    throw new ValidationError(
      `durability must be 'fsync' or 'os', got ${JSON.stringify(durability)}`,
    );
  }
  if (busyTimeoutMs !== undefined && (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0)) {
    throw new ValidationError(`busyTimeoutMs must be an integer ≥ 0, got ${String(busyTimeoutMs)}`);
  }
  if (syncOnThreadPool !== undefined && typeof syncOnThreadPool !== 'boolean') {
    throw new ValidationError(
      `syncOnThreadPool must be true or false, got ${JSON.stringify(syncOnThreadPool)}`,
    );
  }
  checkClockMode(clockMode);
}

/** Options only a SQLite file reads (see EngineOptions). */
const SQLITE_ONLY = ['durability', 'busyTimeoutMs', 'syncOnThreadPool'] as const;

/**
 * Refuses an option of another engine: `durability: 'fsync'` asked of `memory:` would promise
 * a durability nothing gives, and PostgreSQL's is the server's own (`synchronous_commit`).
 */
export function checkOptionsOfEngine(url: string, options: EngineOptions): void {
  if (url.startsWith('sqlite:')) return;
  const engine = url === 'memory:' ? 'memory:' : 'PostgreSQL';
  const given = SQLITE_ONLY.filter((name) => options[name] !== undefined);
  if (given.length > 0) {
    throw new ValidationError(
      given.map((name) => `option ${name} applies to SQLite storage (sqlite:…), not to ${engine}`),
    );
  }
}
