import { type Logger, pino } from 'pino';
import type { Broker, Clock, Queue } from '../../src/broker/index.js';
import { open } from '../../src/index.js';
import { type AppOptions, createApp } from '../../src/server/index.js';

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  baseUrl: string;
  /** The storage behind the server, for checking state directly. */
  broker: Broker;
  /** Closes the server (waiting long polls answer empty), then the storage. */
  close(): Promise<void>;
}

export interface TestServerOptions extends Omit<AppOptions, 'broker'> {
  /** Engine URL. Default `memory:`. */
  url?: string;
  /** The broker's clock, e.g. a ManualClock. */
  clock?: Clock;
}

/**
 * `real` with every queue it hands out (opened, created or looked up) passed through `wrap`:
 * faults and holds for tests, whichever way a server reaches the queue.
 */
export function withWrappedQueues(real: Broker, wrap: (queue: Queue) => Queue): Broker {
  const ensureQueue = real.ensureQueue?.bind(real);
  return Object.assign(Object.create(real), {
    queue: async (...args: Parameters<Broker['queue']>) => wrap(await real.queue(...args)),
    handle: (name: string) => wrap(real.handle(name)),
    ...(ensureQueue === undefined
      ? {}
      : {
          ensureQueue: async (...args: Parameters<typeof ensureQueue>) => {
            const { queue, created } = await ensureQueue(...args);
            return { queue: wrap(queue), created };
          },
        }),
  });
}

/** A real server on a free loopback port over a fresh storage. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const { url = 'memory:', clock, ...appOptions } = options;
  const broker = await open(url, clock === undefined ? {} : { clock });
  const app = await createApp({
    receiptSecret: 'test-secret-of-at-least-32-characters',
    ...appOptions,
    broker,
  });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  let closing: Promise<void> | undefined;
  return {
    baseUrl,
    broker,
    close() {
      closing ??= app.close().finally(() => broker.close());
      return closing;
    },
  };
}

// biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely
export interface Answer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** One JSON request; the body is sent as JSON unless `raw` text is given. */
// biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely
export async function call<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  options: {
    body?: unknown;
    /** The body as sent: text (sent as UTF-8) or bytes. */
    raw?: string | Uint8Array;
    headers?: Record<string, string>;
    apiKey?: string;
  } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...options.headers };
  const hasBody = options.body !== undefined || options.raw !== undefined;
  if (hasBody && headers['content-type'] === undefined)
    headers['content-type'] = 'application/json';
  if (options.apiKey !== undefined) headers.authorization = `Bearer ${options.apiKey}`;
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    ...(hasBody ? { body: (options.raw ?? JSON.stringify(options.body)) as BodyInit } : {}),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: response.status, body: body as T, headers: response.headers };
}

/** A logger at `level` whose lines, parsed, a test reads from `lines`. */
export function captureLogs(level = 'info'): {
  // biome-ignore lint/suspicious/noExplicitAny: tests read log lines loosely
  lines: Record<string, any>[];
  logger: Logger;
} {
  // biome-ignore lint/suspicious/noExplicitAny: tests read log lines loosely
  const lines: Record<string, any>[] = [];
  const logger = pino({ level }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { lines, logger };
}
