import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { type DestinationStream, type Logger, pino } from 'pino';
import type { Broker, Clock, Scheduler } from '../broker/index.js';
import { ValidationError } from '../core/index.js';
import { redactUrl, storageUrlProblem } from '../engine/index.js';
import { open } from '../open.js';
import { createApp } from './app.js';
import type { ServerConfig } from './config.js';
import { DEFAULT_LIMITS, type Limits } from './limits.js';
import { LogBlocks } from './log-blocks.js';
import type { SqsSettings } from './sqs/context.js';
import { cutStreams } from './stream/stream-endpoint.js';

/** Options of `startServer` beyond its configuration. */
export interface StartOptions {
  /** Where JSON log lines go, in blocks (see LogBlocks). Default: standard output. */
  logDestination?: DestinationStream;
  /** The broker's clock (tests). Default: the system clock. */
  clock?: Clock;
  /** Serve this broker instead of opening `config.storage` (it is still closed at shutdown). */
  broker?: Broker;
}

/** A listening server. */
export interface RunningServer {
  /** The base URL clients use, e.g. `http://127.0.0.1:7700`. */
  readonly url: string;
  /** The port it listens on: the one configured, or the one picked for port 0. */
  readonly port: number;
  /** The Fastify instance serving the API. */
  readonly app: FastifyInstance;
  /** The broker it serves, closed by `close()`. */
  readonly broker: Broker;
  /** The server's logger (JSON lines). */
  readonly logger: Logger;
  /**
   * Stops accepting connections, answers waiting long polls (empty), lets requests in flight
   * finish (cut after `shutdownTimeoutMs`), then closes the storage. Safe to call twice.
   */
  close(): Promise<void>;
}

/**
 * Log lines go out in writes of this many bytes, not one write per line: a busy server logs a
 * few lines per job (R17), and a write for each cost it 7–10% of its CPU with `work()` over the
 * stream.
 */
const LOG_BLOCK_BYTES = 4096;
/** Lines in a block not yet full are written at least this often. */
const LOG_FLUSH_MS = 250;

/**
 * How long after the shutdown timeout the storage's close waits for the app's: enough for what
 * a healthy storage answers at once (the sessions of the stream connections cut), not for a lock.
 */
const AFTER_CUT_MS = 1000;

/** A flush's failure (standard output closed) is not the server's. */
function ignore(): void {}

/** Opens the configured storage and serves the API on it. */
export async function startServer(
  config: ServerConfig,
  options: StartOptions = {},
): Promise<RunningServer> {
  const logger = pino(
    { level: config.logLevel, base: { service: 'leaseq' } },
    new LogBlocks(options.logDestination ?? pino.destination({ sync: true }), LOG_BLOCK_BYTES),
  );
  // Checked here too for a config not made by loadConfig: open() would take a server's URL
  // as a client's and then refuse `durability`, an option nobody gave.
  const wrong =
    options.broker === undefined
      ? storageUrlProblem(config.storage, { servers: false })
      : undefined;
  if (wrong !== undefined) throw new ValidationError(`storage: ${wrong}`);
  // A port in use, or a host not of this machine, is found before the storage is opened: a new
  // SQLite file and its directories would be made first, and left behind by the failed start.
  if (options.broker === undefined && config.port !== 0) await checkListen(config);
  const broker =
    options.broker ??
    (await open(config.storage, {
      // The loop serves every connection: a sync must not stop it (see EngineOptions).
      ...(config.storage.startsWith('sqlite:')
        ? { durability: config.durability, syncOnThreadPool: true }
        : {}),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
    }));
  let app: FastifyInstance | undefined;
  try {
    app = await createApp({
      broker,
      limits: limitsOf(config),
      keys: config.keys,
      logger,
      ui: config.ui,
      ...(config.receiptSecret === undefined ? {} : { receiptSecret: config.receiptSecret }),
      ...(config.sqs === 'on' ? { sqs: sqsSettings(config) } : {}),
    });
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    // An app built already re-reads the stored receipt secret every 10 s: left open, it would go
    // on reading the storage closed here for as long as the process lives (one that embeds the
    // server and tries another port next).
    await app?.close().catch(() => undefined);
    await broker.close();
    logger.flush(ignore);
    throw error;
  }
  // Periodic jobs (R25): every server runs a scheduler; several over one storage agree.
  const scheduler = broker.scheduler?.();
  scheduler?.start((error, schedule) =>
    schedule === undefined
      ? logger.error({ err: error }, 'scheduler pass failed')
      : logger.error(
          { err: error, queue: schedule.queue, schedule: schedule.name },
          'schedule could not publish',
        ),
  );
  const port = (app.server.address() as { port: number }).port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  if (config.keys.length === 0) {
    logger.warn('no API keys configured: every request is allowed, so only loopback is served');
  }
  // Where it listens (port 0 picks the port) and its pid, which supervisors and scripts wait
  // for: written at every level but silent, a server at warn included.
  const startLine = config.logLevel === 'silent' ? logger : logger.child({}, { level: 'info' });
  startLine.info(
    {
      url,
      storage: redactUrl(config.storage),
      keys: config.keys.length,
      pid: process.pid,
      ...(config.ui ? { dashboard: `${url}/ui/` } : {}),
    },
    `leaseq listening on ${url}`,
  );
  // Whoever waits for this line (a supervisor, a script) sees it now.
  logger.flush(ignore);
  const flushing = setInterval(() => logger.flush(ignore), LOG_FLUSH_MS).unref();
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      await shutDown(app, broker, logger, config.shutdownTimeoutMs, scheduler);
      clearInterval(flushing);
    })();
    return closing;
  };
  return { url, port, app, broker, logger, close };
}

function sqsSettings(config: ServerConfig): Partial<SqsSettings> {
  return {
    region: config.sqsRegion,
    accountId: config.sqsAccountId,
    staleReceipts: config.sqsStaleReceipts,
    ...(config.sqsBaseUrl === undefined ? {} : { baseUrl: config.sqsBaseUrl.replace(/\/+$/, '') }),
  };
}

async function shutDown(
  app: FastifyInstance,
  broker: Broker,
  logger: Logger,
  timeoutMs: number,
  scheduler: Scheduler | undefined,
): Promise<void> {
  logger.info('shutting down: no new requests, answering waiting receives');
  let timedOut = () => {};
  const deadline = new Promise<void>((resolve) => {
    timedOut = resolve;
  });
  // Storage calls still waiting then (on another transaction's lock) are abandoned, not waited
  // for: rolled back, or failed as maybe done where their commit was under way.
  const abandon = new AbortController();
  let brokerClosed: Promise<void> | undefined;
  const closeBroker = () => {
    brokerClosed ??= broker.close({ signal: abandon.signal });
    return brokerClosed;
  };
  let late: NodeJS.Timeout | undefined;
  const cut = setTimeout(() => {
    logger.warn({ timeoutMs }, 'requests still in flight after the shutdown timeout: cutting them');
    app.server.closeAllConnections();
    // Upgraded sockets are not among those: the stream's connections are cut apart.
    cutStreams(app);
    abandon.abort();
    timedOut();
    // The app's close may still wait on the storage then: stream frames and the sessions of the
    // connections it closes, queued behind a call another transaction's lock holds. Only the
    // broker's close abandons such calls: it does not wait for the app's beyond a moment.
    late = setTimeout(() => void closeBroker().catch(() => undefined), AFTER_CUT_MS);
  }, timeoutMs);
  try {
    // No occurrence published after this; a pass under way may wait for the storage (a lock
    // another transaction holds): no longer than the shutdown timeout. The app closes meanwhile:
    // no new connections, waiting long polls answered, /readyz 503 from the first moment.
    await Promise.all([Promise.race([scheduler?.stop(), deadline]), app.close()]);
  } finally {
    // Storage calls may outlive their requests (a socket cut, a stream gone): the close waits
    // for them until the timeout, then cuts them.
    await closeBroker();
    clearTimeout(cut);
    clearTimeout(late);
  }
  logger.info('stopped');
  logger.flush(ignore);
}

/** Listens on `config`'s address for a moment: what would refuse the server refuses this. */
async function checkListen(config: ServerConfig): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host: config.host, port: config.port, exclusive: true }, resolve);
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/** The limits among the settings (a ServerConfig has every other setting too). */
function limitsOf(config: ServerConfig): Limits {
  return Object.fromEntries(
    Object.keys(DEFAULT_LIMITS).map((name) => [name, config[name as keyof Limits]]),
  ) as unknown as Limits;
}
