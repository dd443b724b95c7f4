import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { StorageUnavailableError } from '../../src/core/index.js';
import {
  type Engine,
  type EngineCapabilities,
  openEngine,
  redactUrl,
} from '../../src/engine/index.js';
import {
  type ConformanceServer,
  RemoteEngine,
  type RemoteTransport,
  startConformanceServer,
} from './remote-engine.js';

/** Where the PostgreSQL engine is tested unless LEASEQ_TEST_POSTGRES_URL says otherwise. */
export const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** One engine the suites run against. */
export interface EngineFactory {
  readonly name: 'memory' | 'sqlite' | 'postgres' | 'http' | 'http-socket' | 'stream';
  /** Opens the engine on this factory's storage; opening again reaches the same storage. */
  open(): Promise<Engine>;
  /**
   * What every open reports, where that is known without opening: the trial then opens nothing
   * (a server started only to be closed again costs each test file its start-up).
   */
  readonly capabilities?: EngineCapabilities;
  /**
   * Removes the storage this factory created (the SQLite temp file) and closes its servers; an
   * open after it starts afresh.
   */
  cleanup(): Promise<void>;
}

/** A factory after a trial open: either it runs, or it is skipped for the written reason. */
export interface EngineUnderTest {
  readonly factory: EngineFactory;
  readonly name: EngineFactory['name'];
  /** Why every test of this engine is skipped; undefined when the engine runs. */
  readonly skipReason: string | undefined;
  /** What the trial open reported; undefined when it failed (the tests then fail too). */
  readonly capabilities: EngineCapabilities | undefined;
  /**
   * Calls go through the HTTP client: a token it never received is refused by the client
   * (UnknownDeliveryError) before the server sees it, and engine-internal reads the server
   * does not serve (`nextEventAt`) are absent.
   */
  readonly viaClient: boolean;
}

/** The targets that reach a server through the remote client (see EngineUnderTest.viaClient). */
const REMOTE_TARGETS: ReadonlySet<string> = new Set(['http', 'http-socket', 'stream']);

export function postgresUrl(): string {
  return process.env.LEASEQ_TEST_POSTGRES_URL ?? DEFAULT_POSTGRES_URL;
}

/**
 * Whether PostgreSQL answers at postgresUrl(), for a `describe.skipIf`: under CI=true one that
 * does not fails the file instead, never skipping silently.
 */
export async function postgresReachable(): Promise<boolean> {
  try {
    const engine = await openEngine(postgresUrl());
    await engine.close();
    return true;
  } catch (error) {
    if (process.env.CI === 'true') throw error;
    return false;
  }
}

/**
 * The factories, fresh: each call makes its own SQLite temp file, so call it once per test
 * file. PostgreSQL shares one database; tests keep apart by unique queue names (`queueName`).
 */
export function engineFactories(): EngineFactory[] {
  return [memoryFactory(), sqliteFactory(), postgresFactory()];
}

/** The engines, and the remote client in front of a server: over plain HTTP and the stream. */
export function conformanceFactories(options: ConformanceOptions = {}): EngineFactory[] {
  if (options.client === false) return engineFactories();
  return [
    ...engineFactories(),
    httpFactory('inject'),
    ...(options.socket === true ? [httpFactory('socket')] : []),
    httpFactory('stream'),
  ];
}

export interface ConformanceOptions {
  /** Run the HTTP client as a target too (default true; suites about storage say false). */
  client?: boolean;
  /** Also run the HTTP client over a real loopback socket (a few files do; inject runs all). */
  socket?: boolean;
}

/**
 * The remote client against a server in process over a memory engine, by plain HTTP
 * (Fastify's inject, or a loopback socket) or by the stream (a WebSocket on a loopback
 * socket): the client's receipts, the batch route or stream frames and the server's checks
 * under the same rules as every engine. Each open is a fresh client; servers are pooled per
 * test file (a closed engine's server serves the next open), so, as on PostgreSQL, the tests
 * keep apart by unique queue names. Not durable (its storage is memory).
 */
function httpFactory(transport: RemoteTransport): EngineFactory {
  const names = { inject: 'http', socket: 'http-socket', stream: 'stream' } as const;
  const started: ConformanceServer[] = [];
  const idle: ConformanceServer[] = [];
  return {
    name: names[transport],
    capabilities: RemoteEngine.CAPABILITIES,
    open: async () => {
      let server = idle.pop();
      if (server === undefined) {
        server = await startConformanceServer(transport);
        started.push(server);
      }
      return new RemoteEngine(server, (done) => idle.push(done));
    },
    cleanup: async () => {
      idle.length = 0;
      await Promise.all(started.splice(0).map((server) => server.close()));
    },
  };
}

function memoryFactory(): EngineFactory {
  return { name: 'memory', open: () => openEngine('memory:'), cleanup: async () => {} };
}

function sqliteFactory(): EngineFactory {
  let dir: string | undefined; // made at the first open, so a skipped engine leaves nothing
  return {
    name: 'sqlite',
    open: () => {
      dir ??= mkdtempSync(join(tmpdir(), 'leaseq-conformance-'));
      return openEngine(`sqlite:${join(dir, 'leaseq.db')}`);
    },
    cleanup: async () => {
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
      dir = undefined;
    },
  };
}

function postgresFactory(): EngineFactory {
  return { name: 'postgres', open: () => openEngine(postgresUrl()), cleanup: async () => {} };
}

let nameCounter = 0;
const RUN_ID = `${process.pid.toString(36)}${Math.floor(Math.random() * 36 ** 4).toString(36)}`;

/** A queue name no other test, test file or concurrent run uses (PostgreSQL is shared). */
export function queueName(label = 'q'): string {
  nameCounter += 1;
  return `lq-${label.slice(0, 24)}-${RUN_ID}-${nameCounter}`;
}

/**
 * Every target of `conformanceFactories()`, each opened once on trial unless its capabilities
 * are known without (the remote client's). Registers the removal of their storage after the test
 * file. Call at the top of a test file (top-level await).
 *
 * The trial runs as the file is collected and leaves nothing behind (see tryEngine): Vitest runs
 * no hook of a file whose tests are all skipped or filtered out (`-t`), so storage or servers the
 * trial kept would outlive such a file.
 */
export async function useConformanceEngines(
  options: ConformanceOptions = {},
): Promise<EngineUnderTest[]> {
  const factories = conformanceFactories(options);
  afterAll(async () => {
    await Promise.all(factories.map((factory) => factory.cleanup()));
  });
  return Promise.all(factories.map(tryEngine));
}

async function tryEngine(factory: EngineFactory): Promise<EngineUnderTest> {
  const only = process.env.LEASEQ_TEST_ENGINES;
  if (only !== undefined && !only.split(',').includes(factory.name)) {
    return notRun(factory, `not in LEASEQ_TEST_ENGINES=${only}`);
  }
  if (factory.capabilities !== undefined) return underTest(factory, { ...factory.capabilities });
  let engine: Engine;
  try {
    engine = await factory.open();
  } catch (error) {
    await factory.cleanup();
    // Unless skipped, the engine's tests run and each fails on this same error.
    return notRun(factory, skipReason(factory, error));
  }
  const capabilities = { ...engine.capabilities };
  await engine.close();
  // The tests open the engine again, on a new SQLite directory.
  await factory.cleanup();
  return underTest(factory, capabilities);
}

function underTest(factory: EngineFactory, capabilities: EngineCapabilities): EngineUnderTest {
  return {
    factory,
    name: factory.name,
    skipReason: undefined,
    capabilities,
    viaClient: REMOTE_TARGETS.has(factory.name),
  };
}

function notRun(factory: EngineFactory, skipReason: string | undefined): EngineUnderTest {
  return {
    factory,
    name: factory.name,
    skipReason,
    capabilities: undefined,
    viaClient: REMOTE_TARGETS.has(factory.name),
  };
}

/**
 * The only reason an engine may be skipped: PostgreSQL is unreachable outside CI.
 * Under CI=true an unreachable PostgreSQL fails.
 * Any other failure to open is a failure of the engine, not a reason to skip it.
 */
function skipReason(factory: EngineFactory, error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : String(error);
  if (factory.name === 'postgres' && process.env.CI !== 'true' && unreachable(error)) {
    return `PostgreSQL unreachable at ${redactUrl(postgresUrl())} (${message}); set LEASEQ_TEST_POSTGRES_URL, or CI=true to make this a failure`;
  }
  return undefined;
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
]);

function unreachable(error: unknown): boolean {
  if (error instanceof StorageUnavailableError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && NETWORK_CODES.has(code);
}
