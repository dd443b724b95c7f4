import { type Broker, type BrokerOptions, EngineBroker, SystemClock } from './broker/index.js';
import type { RemoteOptions } from './client/remote-broker.js';
import { addUnknownOptions } from './core/errors.js';
import { ValidationError } from './core/index.js';
import { show } from './core/validate.js';
import { checkEngineOptions } from './engine/engine-options.js';
import { type EngineOptions, openEngine } from './engine/open-engine.js';

/** What `open` takes: the broker's clock, the storage's options, or a server's (by the URL). */
export interface OpenOptions extends BrokerOptions, EngineOptions, RemoteOptions {}

/**
 * How far ahead of the broker's clock (the wall clock, or the database's) a queue's stored clock
 * may be for a broker `open` makes to start there (ms): a clock stepped back, even by a time
 * zone's offset, is less. A queue further ahead was driven at times of its own through the
 * engine's API (a test, a tool) and is left to stand still as before: starting there would move
 * every other queue of the storage that far ahead, for good (their delays, leases and expiries
 * ended at once).
 */
const RAISE_LIMIT_MS = 86_400_000;

/** Which storage each option of `open` is read for (the compiler checks the list is whole). */
const OPTION_USE = {
  clock: 'storage',
  durability: 'storage',
  clockMode: 'storage',
  busyTimeoutMs: 'storage',
  syncOnThreadPool: 'storage',
  apiKey: 'server',
  transport: 'server',
  fetch: 'server',
  timeoutMs: 'server',
  maxWaitPerRequestMs: 'server',
  maxBatch: 'server',
  maxReceipts: 'server',
  prefetchIdleMs: 'server',
} as const satisfies Record<keyof OpenOptions, 'storage' | 'server'>;

/**
 * Refuses an option `open` would not read for this URL: a misspelt name (`durabilty`) or one of
 * the other kind (`apiKey` for a SQLite file, `durability` for a server, whose storage is
 * configured where it runs) would otherwise be dropped without a word.
 */
function checkOpenOptions(options: unknown, server: boolean): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(`open options must be an object, got ${show(options)}`);
  }
  const issues: string[] = [];
  addUnknownOptions(issues, Object.keys(options), (name) => Object.hasOwn(OPTION_USE, name), {
    describe: (shown) => `unknown option ${shown} of open`,
  });
  for (const [name, value] of Object.entries(options)) {
    const use = Object.hasOwn(OPTION_USE, name)
      ? (OPTION_USE as Record<string, 'storage' | 'server'>)[name]
      : undefined;
    // Unknown (counted above), or not given, as `{ apiKey: process.env.KEY }` with no key set:
    // nothing is dropped.
    if (use === undefined || value === undefined) continue;
    if (server && use === 'storage') {
      issues.push(
        `option ${name} applies to storage opened in-process, not to a server URL (the server's own settings hold there)`,
      );
    } else if (!server && use === 'server') {
      issues.push(`option ${name} applies to a server URL (http://…), not to storage`);
    }
  }
  if (issues.length > 0) throw new ValidationError(issues);
}

function checkClock(clock: unknown): void {
  if (clock === undefined) return;
  const { now, sleep } = (typeof clock === 'object' && clock !== null ? clock : {}) as Record<
    string,
    unknown
  >;
  if (typeof now !== 'function' || typeof sleep !== 'function') {
    throw new ValidationError(`clock must be a Clock (now() and sleep()), got ${show(clock)}`);
  }
}

/**
 * Opens a Broker over the storage a URL names (see `openEngine`): `memory:`,
 * `sqlite:path/to.db` (default `sqlite:./data/leaseq.db`) or `postgres://…`; or over a leaseq
 * server, `http://host:7700` (see `openRemote`: `apiKey`, `fetch`).
 */
export async function open(url?: string, options: OpenOptions = {}): Promise<Broker> {
  const server = url !== undefined && /^https?:\/\//i.test(url);
  checkOpenOptions(options, server);
  if (server) {
    const { openRemote } = await import('./client/remote-broker.js');
    return openRemote(url, options);
  }
  const { clock, ...engineOptions } = options;
  // Every option is checked before the storage is opened: a bad one creates no database.
  checkClock(clock);
  checkEngineOptions(engineOptions);
  // Several processes may share the storage: a call never fails because another committed first.
  const engine = await openEngine(url, { clockMode: 'follow', ...engineOptions });
  if (clock !== undefined) return new EngineBroker(engine, { clock });
  const system = new SystemClock();
  try {
    if (engine.storageTime !== undefined) await system.syncTo(engine.storageTime.bind(engine));
    // On this machine's clock (or the database's), not behind what the storage recorded: a
    // process that ran on while that clock stepped back (SystemClock goes on at its pace) left
    // its queues' clocks ahead of it. Time goes on from there, rather than standing still until
    // the clock catches up (every lease, delay and timeout held that long), or every call being
    // a ClockError (`clockMode: 'strict'`). Not to a queue further ahead than RAISE_LIMIT_MS.
    const recorded = await engine.recordedTime?.(system.now() + RAISE_LIMIT_MS);
    if (recorded !== undefined) system.raiseTo(recorded);
  } catch (error) {
    // Opened, but no broker is made of it: closed here, or its connections would be left
    // open, keeping the process alive.
    await engine.close().catch(() => undefined);
    throw error;
  }
  return new EngineBroker(engine, { clock: system });
}
