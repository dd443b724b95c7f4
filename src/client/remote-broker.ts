import { MAX_TIMER_MS } from '../broker/clock.js';
import { onAbort } from '../broker/on-abort.js';
import {
  type Broker,
  type BrokerTransaction,
  checkCloseOptions,
  type StorageCloseOptions,
} from '../broker/queue.js';
import { addUnknownOptions } from '../core/errors.js';
import {
  ClosedError,
  checkQueueName,
  checkSameOptions,
  NotFoundError,
  type QueueOptions,
  type ResolvedQueueOptions,
  UnsupportedError,
  ValidationError,
} from '../core/index.js';
import { resolveQueueOptions, show } from '../core/validate.js';
import { apiKeyProblem, boundsFromWire, serverUrlProblem } from '../wire/index.js';
import type { Channel } from './channel.js';
import { type AnswerShape, type Fetch, HttpTransport } from './http.js';
import { HttpChannel } from './http-channel.js';
import { ReceiptBook } from './receipt-book.js';
import { RemoteQueue } from './remote-queue.js';
import { ServerLimitsReader } from './server-limits.js';
import { StreamChannel } from './stream-channel.js';

/** Options of `openRemote` and a RemoteBroker. */
export interface RemoteOptions {
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /**
   * How operations and receives travel: `stream`, one WebSocket with pushed deliveries
   * (docs/stream.md), or `http`, one request per batch and long-poll receives. Default
   * `stream`, or `http` when a `fetch` is given. Queue administration and inspection are
   * HTTP requests either way.
   */
  transport?: 'stream' | 'http';
  /** Sends HTTP requests with this fetch instead of node:http (tests, other runtimes). */
  fetch?: Fetch;
  /**
   * How long one request may take beyond its long-poll wait. Default 30 s. Any length (a very
   * long one means "practically never"): one past the longest Node timer, 2147483647 ms
   * (about 24.8 days), is timed in parts.
   */
  timeoutMs?: number;
  /**
   * HTTP only: the longest wait one receive request carries; longer waits are several long
   * polls. Default, and at most: the server's maxWaitMs (`GET /v1/limits`).
   */
  maxWaitPerRequestMs?: number;
  /**
   * HTTP only: most entries one batch request carries; more are split. Default, and at most:
   * the server's maxBatch (`GET /v1/limits`).
   */
  maxBatch?: number;
  /**
   * Most receipts remembered per queue; when full, those of deliveries settled through this
   * client go first, oldest first, then the oldest of the others. Default 100,000.
   */
  maxReceipts?: number;
  /**
   * Stream only: how long deliveries pushed ahead of a receive are held for the next one
   * before they are given back (nacked without delay). Default 2000 ms; an integer from 0 to
   * 2147483647 (the longest Node timer, about 24.8 days): a held delivery goes back before its
   * lease ends anyway, so a longer hold means nothing more and is refused as a mistake.
   */
  prefetchIdleMs?: number;
}

/**
 * A queue as the server shows it. The public signatures spell this shape out as Broker's do
 * (it is the engine's QueueInfo, which client/ does not import).
 */
interface QueueView {
  /** The queue's name. */
  name: string;
  /** Its options, defaults filled in. */
  options: ResolvedQueueOptions;
}

/** A Broker whose queues live on a leaseq server. */
export class RemoteBroker implements Broker {
  private readonly http: HttpTransport;
  private readonly channel: Channel;
  private readonly limits: ServerLimitsReader;
  private readonly books = new Map<string, ReceiptBook>();
  private readonly maxReceipts: number;
  /** Aborted as `close()` begins: its queues' `watchClose` listeners hear of it. */
  private readonly closing = new AbortController();
  /** The close, shared by every call of close(). */
  private ending: Promise<void> | undefined;
  /** Aborted by any close's signal: the close waits no longer for the server. */
  private readonly cutClose = new AbortController();
  /** How operations and receives travel (see RemoteOptions.transport). */
  readonly transport: 'stream' | 'http';

  constructor(baseUrl: string, options: RemoteOptions = {}) {
    const problem = serverUrlProblem(baseUrl);
    if (problem !== undefined) throw new ValidationError(problem);
    checkRemoteOptions(options);
    this.http = new HttpTransport(baseUrl, options);
    this.limits = new ServerLimitsReader(this.http);
    this.transport = options.transport ?? (options.fetch === undefined ? 'stream' : 'http');
    this.channel =
      this.transport === 'stream'
        ? new StreamChannel(streamUrl(this.http.baseUrl), {
            ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
            timeoutMs: options.timeoutMs ?? 30_000,
            prefetchIdleMs: options.prefetchIdleMs ?? 2000,
          })
        : new HttpChannel(
            this.http,
            { maxWaitPerRequestMs: options.maxWaitPerRequestMs, maxBatch: options.maxBatch },
            this.limits,
          );
    this.maxReceipts = options.maxReceipts ?? 100_000;
  }

  /** The server's URL, trailing slashes removed, and a path of `/v1` alone (the API's prefix). */
  get baseUrl(): string {
    return this.http.baseUrl;
  }

  /**
   * Opens the named queue, creating it when missing. An existing queue is only read (a key with
   * consume or publish rights is enough); creating one needs admin rights. `P`, the type of its
   * payloads, is the caller's claim (see Queue): default unknown.
   */
  async queue<P = unknown>(name: string, options: QueueOptions = {}): Promise<RemoteQueue<P>> {
    checkQueueName(name);
    // Checked here as in-process: JSON would send a NaN or -Infinity as null, "none".
    resolveQueueOptions(options);
    try {
      const view = await this.http.request<QueueView>('GET', this.path(name), {
        answer: QUEUE_VIEW,
      });
      checkSameOptions(name, boundsFromWire(view.options), options);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      await this.createQueue(name, options);
    }
    return this.handle<P>(name);
  }

  /** Creates the queue, or opens it when it exists with the same options (admin). */
  async createQueue(
    name: string,
    options: QueueOptions = {},
  ): Promise<{
    /** The queue's name. */
    name: string;
    /** Its options, defaults filled in. */
    options: ResolvedQueueOptions;
    /** true when this call created the queue; false when it was there. */
    created: boolean;
  }> {
    checkQueueName(name);
    resolveQueueOptions(options);
    const view = await this.http.request<QueueView & { created: boolean }>('PUT', this.path(name), {
      body: options,
      answer: QUEUE_VIEW,
    });
    return { ...view, options: boundsFromWire(view.options) };
  }

  /**
   * A handle on a queue without asking the server; calls answer NOT_FOUND if it is missing.
   * Refused with CLOSED once the client's close began, as every other call of it.
   */
  handle<P = unknown>(name: string): RemoteQueue<P> {
    if (this.closing.signal.aborted) throw new ClosedError('the client is closed');
    checkQueueName(name);
    return new RemoteQueue<P>(
      name,
      this.http,
      this.channel,
      this.book(name),
      this.limits,
      this.closing.signal,
    );
  }

  async updateQueue(name: string, options: QueueOptions): Promise<ResolvedQueueOptions> {
    checkQueueName(name);
    resolveQueueOptions(options);
    const view = await this.http.request<QueueView>('PATCH', this.path(name), {
      body: options,
      answer: QUEUE_VIEW,
    });
    return boundsFromWire(view.options);
  }

  async listQueues(): Promise<
    {
      /** The queue's name. */
      name: string;
      /** Its options, defaults filled in. */
      options: ResolvedQueueOptions;
    }[]
  > {
    const { queues } = await this.http.request<{ queues: QueueView[] }>('GET', '/v1/queues', {
      answer: { queues: 'array' },
    });
    return queues.map((view) => ({ name: view.name, options: boundsFromWire(view.options) }));
  }

  async deleteQueue(name: string): Promise<boolean> {
    checkQueueName(name);
    const { deleted } = await this.http.request<{ deleted: boolean }>('DELETE', this.path(name), {
      answer: { deleted: 'boolean' },
    });
    this.books.delete(name);
    return deleted;
  }

  /** Transactions need the SQL engine in-process; over HTTP there are none. */
  transaction<T>(_work: (tx: BrokerTransaction) => Promise<T>): Promise<T> {
    return Promise.reject(
      new UnsupportedError(
        'transactions are not available over HTTP; open the SQL engine in-process',
      ),
    );
  }

  /**
   * Gives back deliveries pushed ahead and not yet received (waiting at most 2 s for the server,
   * less if `options.signal` aborts), ends waiting receives (empty answers over HTTP, whose
   * server's answer as they ended is given back within the same 2 s), ends the sessions opened
   * through this client and not closed (with the stream's connection; over HTTP by closing them
   * within the same 2 s), so that their deliveries are ready again at once, and refuses later
   * calls with CLOSED (SESSION_CLOSED for a session the close ended). Every close shares the
   * first's, and any one's signal cuts what they all wait for.
   */
  async close(options?: StorageCloseOptions): Promise<void> {
    const { signal } = checkCloseOptions(options);
    // A second close of its own would end the connection under the first's give-back.
    this.ending ??= this.closeOnce();
    if (signal?.aborted) this.cutClose.abort();
    else if (signal !== undefined) {
      const unwatch = onAbort(signal, () => this.cutClose.abort());
      this.ending.then(unwatch, unwatch);
    }
    await this.ending;
  }

  private async closeOnce(): Promise<void> {
    // The channel refuses receives from the moment its close begins (the queues' `closed`);
    // then the queues' watchers are told, while held deliveries are still being given back.
    const closingChannel = this.channel.close(this.cutClose.signal);
    if (!this.closing.signal.aborted) this.closing.abort();
    await closingChannel;
    this.http.close();
    this.books.clear();
  }

  private path(name: string): string {
    return `/v1/queues/${encodeURIComponent(name)}`;
  }

  /** One book per queue name, shared by every handle of that queue from this client. */
  private book(name: string): ReceiptBook {
    let book = this.books.get(name);
    if (book === undefined) {
      book = new ReceiptBook(this.maxReceipts);
      this.books.set(name, book);
    }
    return book;
  }
}

/** What a leaseq server answers about one queue has: its options. */
const QUEUE_VIEW: AnswerShape = { name: 'string', options: 'object' };

/** `http://host:port/prefix` → `ws://host:port/prefix/v1/stream`. */
function streamUrl(baseUrl: string): string {
  return `${baseUrl.replace(/^http/i, 'ws')}/v1/stream`;
}

/** Each option's value, as in-process options are checked: a bad one would fail every call later. */
function checkRemoteOptions(options: unknown): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(`options must be an object, got ${show(options)}`);
  }
  const given = options as Record<string, unknown>;
  const issues: string[] = [];
  const whole = (name: string, least: number, most = Number.MAX_SAFE_INTEGER) => {
    const value = given[name];
    if (value === undefined) return;
    if (!Number.isSafeInteger(value) || (value as number) < least) {
      issues.push(`${name} must be an integer of at least ${least}, got ${show(value)}`);
    } else if ((value as number) > most) {
      issues.push(
        `${name} must be at most ${most} ms (the longest a timer waits, about 24.8 days), got ${show(value)}`,
      );
    }
  };
  addUnknownOptions(
    issues,
    Object.keys(given),
    (name) => given[name] === undefined || REMOTE_OPTIONS.has(name),
  );
  const { apiKey, transport, fetch } = given;
  if (apiKey !== undefined && (typeof apiKey !== 'string' || apiKey === '')) {
    issues.push(`apiKey must be a non-empty string, got ${show(apiKey)}`);
  } else if (typeof apiKey === 'string') {
    // No header carries it: every call would fail as if the server could not be reached.
    const problem = apiKeyProblem(apiKey);
    if (problem !== undefined) {
      issues.push(
        `apiKey is not an API key: ${problem}; a key is printable ASCII without spaces (letters, digits and punctuation)`,
      );
    }
  }
  if (transport !== undefined && transport !== 'stream' && transport !== 'http') {
    issues.push(`transport must be 'stream' or 'http', got ${show(transport)}`);
  }
  if (fetch !== undefined && typeof fetch !== 'function') {
    issues.push(`fetch must be a fetch function, got ${show(fetch)}`);
  }
  whole('timeoutMs', 1);
  whole('maxWaitPerRequestMs', 1);
  whole('maxBatch', 1);
  whole('maxReceipts', 1);
  // A hold of pushed deliveries longer than a timer takes is a mistake (see RemoteOptions); a
  // long timeoutMs is not ("practically never"), and is timed in parts.
  whole('prefetchIdleMs', 0, MAX_TIMER_MS);
  if (issues.length > 0) throw new ValidationError(issues);
}

/** Every RemoteOptions name, checked against the interface: a new option cannot be left out. */
const REMOTE_OPTIONS: ReadonlySet<string> = new Set(
  Object.keys({
    apiKey: true,
    transport: true,
    fetch: true,
    timeoutMs: true,
    maxWaitPerRequestMs: true,
    maxBatch: true,
    maxReceipts: true,
    prefetchIdleMs: true,
  } satisfies Record<keyof RemoteOptions, true>),
);

/**
 * Connects to a leaseq server: `openRemote('http://127.0.0.1:7700', { apiKey })`. The Broker
 * and its queues behave as in-process ones (same interface, same error classes by code).
 */
export async function openRemote(
  baseUrl: string,
  options: RemoteOptions = {},
): Promise<RemoteBroker> {
  return new RemoteBroker(baseUrl, options);
}
