import { ValidationError } from '../core/index.js';
import type { Engine } from './engine.js';
import { MemoryEngine } from './memory/memory-engine.js';

/** Where the embedded default keeps its data. */
export const DEFAULT_URL = 'sqlite:./data/leaseq.db';

export interface EngineOptions {
  /** SQLite: 'fsync' (synchronous FULL, the default) or 'os' (NORMAL: survives a process crash, not a power loss). */
  durability?: 'fsync' | 'os';
  /**
   * 'strict' (default): a `now` behind a queue's clock is a ClockError (R2), as in the core.
   * 'follow': on storage shared by processes, such a `now` is raised to the queue's clock —
   * another process's call committed first — so calls never fail for losing that race. The
   * Broker opens engines this way.
   */
  clockMode?: 'strict' | 'follow';
  /** SQLite: how long a call waits for another process's write lock, in ms. Default 5000. */
  busyTimeoutMs?: number;
}

/**
 * Opens the storage a URL names: `memory:`, `sqlite:path/to.db` (the default,
 * `sqlite:./data/leaseq.db`) or `postgres://user@host:port/db`.
 */
export async function openEngine(
  url: string = DEFAULT_URL,
  options: EngineOptions = {},
): Promise<Engine> {
  if (url === 'memory:') return new MemoryEngine();
  if (url.startsWith('sqlite:')) {
    const { openSqliteEngine } = await import('./sqlite/sqlite-engine.js');
    return openSqliteEngine(url.slice('sqlite:'.length), options);
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const { openPostgresEngine } = await import('./postgres/postgres-engine.js');
    return openPostgresEngine(url, options);
  }
  throw new ValidationError(
    `unsupported storage URL ${JSON.stringify(redactUrl(url))}: use memory:, sqlite:path/to.db or postgres://…`,
  );
}

/** A URL fit for messages and logs: any password replaced. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:/@]+):[^@]*@/i, '$1:***@');
}

export function checkClockMode(mode: unknown): 'strict' | 'follow' {
  if (mode === undefined || mode === 'strict') return 'strict';
  if (mode === 'follow') return 'follow';
  throw new ValidationError(`clockMode must be 'strict' or 'follow', got ${JSON.stringify(mode)}`);
}
