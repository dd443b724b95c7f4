import { onAbort } from '../broker/on-abort.js';
import {
  ClosedError,
  CodedError,
  StorageUnavailableError,
  ValidationError,
} from '../core/index.js';
import {
  CLOSED_IN_FLIGHT,
  ConnectionLostError,
  errorFromResponse,
  isLeaseqErrorBody,
  noSuchRouteError,
  notLeaseqAnswer,
} from './errors.js';
import { setLongTimeout } from './long-timeout.js';
import { type Exchange, type ExchangeRequest, NodeHttpSender } from './node-transport.js';

/** A function of the global `fetch`'s type, to send requests with. */
export type Fetch = typeof fetch;

/** Options of an HttpTransport. */
export interface TransportOptions {
  /** Sent as `Authorization: Bearer <apiKey>`. Default: no Authorization header. */
  apiKey?: string;
  /** Sends requests with this fetch instead of node:http (tests, other runtimes). */
  fetch?: Fetch;
  /**
   * How long one request may take, beyond any long-poll wait it carries. Default 30 s. Any
   * length: one past the longest Node timer (about 24.8 days) is timed in parts.
   */
  timeoutMs?: number;
}

/** Options of one `HttpTransport.request`. */
export interface RequestOptions {
  /** Sent as the JSON body; a request without one has no body. */
  body?: unknown;
  /**
   * Ends the request early; the caller decides what an aborted request means. Over node:http
   * (no `fetch` option) it ends the server's wait rather than cutting the request: an answer
   * the server sent as it ended is still read and answered (ExchangeRequest.endWait); with a
   * `fetch` of one's own the request is cut, and such an answer lost.
   */
  signal?: AbortSignal;
  /** Added to the timeout: the long-poll wait the request asks the server for. */
  waitMs?: number;
  /**
   * Fields a leaseq server's answer to this request has, by kind: a 2xx answer without one of
   * them is not taken for a leaseq answer. Any 2xx answer must be a JSON object.
   */
  answer?: Readonly<Record<string, 'array' | 'object' | 'boolean' | 'string'>>;
  /** A further check of a 2xx answer that has the fields of `answer` (their contents). */
  accepts?: (body: Record<string, unknown>) => boolean;
}

/** Fields an answer must have, by name, and the kind of each (RequestOptions.answer). */
export type AnswerShape = NonNullable<RequestOptions['answer']>;

/**
 * Thrown when a request was ended by the caller's own signal (a receive's) with no answer;
 * closing the client fails its requests in flight with ClosedError instead.
 */
export class RequestAborted extends CodedError<'ABORTED'> {
  readonly code = 'ABORTED' as const;
  constructor() {
    super('the request was aborted');
  }
}

/** JSON over HTTP to one leaseq server, errors turned back into leaseq's error classes. */
export class HttpTransport {
  private readonly send: (url: string, request: ExchangeRequest) => Promise<Exchange>;
  private readonly nodeSender: NodeHttpSender | undefined;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly closing = new AbortController();

  /** The server's URL, trailing slashes removed; API paths are appended to it. */
  readonly baseUrl: string;

  /**
   * `baseUrl` may carry a path prefix (`http://host/leaseq`); API paths are appended to it. A
   * path of `/v1` alone, the API's own prefix (pasted from a request's URL), is taken for the
   * server's root: `http://host:7700/v1` is `http://host:7700`; a longer prefix is kept.
   */
  constructor(baseUrl: string, options: TransportOptions = {}) {
    this.baseUrl = serverRoot(baseUrl);
    const fetchFn = options.fetch;
    if (fetchFn === undefined) {
      const sender = new NodeHttpSender();
      this.nodeSender = sender;
      this.send = (url, request) => sender.send(url, request);
    } else {
      this.nodeSender = undefined;
      this.send = async (url, request) => {
        const response = await fetchFn(url, request);
        return {
          status: response.status,
          text: await response.text(),
          contentType: response.headers?.get('content-type') ?? undefined,
          location: response.headers?.get('location') ?? undefined,
        };
      };
    }
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.headers = {
      accept: 'application/json',
      ...(options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` }),
    };
  }

  /** true once `close()` was called. */
  get closed(): boolean {
    return this.closing.signal.aborted;
  }

  /** Aborted by `close()`: a wait made for this client's calls ends with it. */
  get closingSignal(): AbortSignal {
    return this.closing.signal;
  }

  /** Cuts every request in flight, which fails with CLOSED as later requests do. */
  close(): void {
    this.closing.abort();
    this.nodeSender?.close();
  }

  /**
   * Sends `method` to `baseUrl` + `path` and answers the JSON body of a 2xx response, which
   * must be an object (as every leaseq route answers). Fails with the leaseq error class of an error response; ClosedError after
   * `close()` (`mayHaveTakenEffect` for a request it cut in flight); RequestAborted when `signal` ended it with no answer; UnansweredError with no answer within the
   * timeout; ConnectionLostError when the connection broke after the request went out;
   * StorageUnavailableError when the server could not be reached otherwise; a RemoteError
   * `HTTP_<status>` saying so for an answer that is not a leaseq server's (an HTML page, a
   * proxy's error, JSON without the fields of `options.answer`). A GET whose answer was lost
   * is sent once more.
   */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    if (this.closed) throw new ClosedError('the client is closed');
    const text = options.body === undefined ? undefined : requestJson(options.body);
    const { signal } = options;
    if (signal?.aborted) throw new RequestAborted();
    // node:http ends the server's wait on the signal, and still reads an answer already sent.
    const endWait = this.nodeSender === undefined ? undefined : signal;
    const link = linkSignals(
      [this.closing.signal, endWait === undefined ? signal : undefined],
      this.timeoutMs + (options.waitMs ?? 0),
    );
    const ended = () => link.aborted() || signal?.aborted === true;
    const exchange = () =>
      this.send(`${this.baseUrl}${path}`, {
        method,
        headers:
          options.body === undefined
            ? this.headers
            : { ...this.headers, 'content-type': 'application/json' },
        ...(text === undefined ? {} : { body: text }),
        signal: link.signal,
        ...(endWait === undefined ? {} : { endWait }),
      });
    let response: Exchange;
    try {
      try {
        response = await exchange();
      } catch (error) {
        // A read changes nothing, so it is sent again once when its answer was lost: a
        // keep-alive connection the server closed as the request went out fails that way.
        if (method !== 'GET' || ended() || link.timedOut() || !answerLost(error)) {
          throw error;
        }
        response = await exchange();
      }
    } catch (error) {
      // Cut by the close: it may have gone out and run, as over a connection that broke.
      if (this.closed) {
        throw new ClosedError(CLOSED_IN_FLIGHT, { cause: error, mayHaveTakenEffect: true });
      }
      if (ended()) throw new RequestAborted();
      if (link.timedOut()) {
        // Not "cannot reach": the request may have gone out and run, as over the stream.
        throw new UnansweredError(
          `${this.baseUrl} did not answer within ${this.timeoutMs} ms: the request may or may not have taken effect`,
          { cause: error },
        );
      }
      const reason = (error as Error).message;
      // Sent over a connection that then broke: the server may have run it. Retrying it as
      // if nothing happened could, say, publish a job without an id twice.
      if (answerLost(error)) {
        throw new ConnectionLostError(
          `the connection to ${this.baseUrl} broke before the answer came (${reason}): the request may or may not have taken effect`,
          { cause: error },
        );
      }
      throw new StorageUnavailableError(`cannot reach ${this.baseUrl}: ${reason}`, {
        cause: error,
      });
    } finally {
      link.dispose();
    }
    const body = parseJson(response.text);
    if (response.status < 200 || response.status > 299) {
      if (isLeaseqErrorBody(body)) {
        throw (
          noSuchRouteError(
            this.baseUrl,
            `${method} ${path.split('?')[0]}`,
            response.status,
            body,
          ) ?? errorFromResponse(response.status, body)
        );
      }
      throw this.foreign(method, path, response, body);
    }
    if (
      !hasShape(body, options.answer) ||
      (options.accepts !== undefined && !options.accepts(body as Record<string, unknown>))
    ) {
      throw this.foreign(method, path, response, body);
    }
    return body as T;
  }

  /** The error of an answer no leaseq server gives (see notLeaseqAnswer). */
  private foreign(method: string, path: string, response: Exchange, body: unknown) {
    const { location } = response;
    return notLeaseqAnswer(this.baseUrl, `${method} ${path}`, {
      ...response,
      location:
        location === undefined || !URL.canParse(location, `${this.baseUrl}${path}`)
          ? undefined
          : new URL(location, `${this.baseUrl}${path}`).href,
      otherShape: body !== undefined,
    });
  }
}

/**
 * `url` without its trailing slashes, nor a path of `/v1` alone: the API's own prefix, which
 * the paths appended to the URL start with. The host is never cut (`http://v1` stays).
 */
function serverRoot(url: string): string {
  const trimmed = url.replace(/\/+$/, '');
  // Only a path of `/v1` alone: a proxy may serve leaseq under a prefix ending in /v1
  // (`https://host/api/v1`), and that URL is kept as given.
  const root = /^([a-z][a-z0-9+.-]*:\/\/[^/]+)\/+v1$/i.exec(trimmed)?.[1];
  return root ?? trimmed;
}

/** Whether `body` is a JSON object with the fields of `shape`, each of its kind. */
function hasShape(body: unknown, shape: AnswerShape | undefined): boolean {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  if (shape === undefined) return true;
  const fields = body as Record<string, unknown>;
  return Object.entries(shape).every(([name, kind]) => {
    const value = fields[name];
    switch (kind) {
      case 'array':
        return Array.isArray(value);
      case 'object':
        return typeof value === 'object' && value !== null && !Array.isArray(value);
      default:
        return typeof value === kind;
    }
  });
}

/** Codes of a connection that was never made: nothing of the request reached the server. */
const UNREACHED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NODATA',
  'EAI_NONAME',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * Codes of a connection that broke once made (node:http, and undici under fetch): the request
 * may have been read.
 */
const BROKEN = new Set([
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * Whether a send failed after its connection was made (node:http's "socket hang up", fetch's
 * "other side closed"), not while connecting (ECONNREFUSED, DNS, a connect timeout). The cause
 * and the attempts of an AggregateError (each address of a name) are looked at too. Another
 * failure (TLS, a header Node refuses to send) is not taken for a lost answer.
 */
function answerLost(error: unknown): boolean {
  let unreached = false;
  let broken = false;
  const look = (value: unknown, depth: number) => {
    if (depth > 4 || typeof value !== 'object' || value === null) return;
    const { code, syscall, cause, errors } = value as {
      code?: unknown;
      syscall?: unknown;
      cause?: unknown;
      errors?: unknown;
    };
    if (syscall === 'connect' || syscall === 'getaddrinfo' || UNREACHED.has(code as string)) {
      unreached = true;
    } else if (BROKEN.has(code as string)) {
      broken = true;
    }
    look(cause, depth + 1);
    if (Array.isArray(errors)) for (const inner of errors) look(inner, depth + 1);
  };
  look(error, 0);
  return broken && !unreached;
}

/** A body JSON cannot carry is the caller's input, not a server out of reach. */
function requestJson(body: unknown): string {
  try {
    return JSON.stringify(body);
  } catch (error) {
    throw new ValidationError(`the request is not JSON: ${(error as Error).message}`);
  }
}

function parseJson(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** One signal for several, plus a timeout, with listeners removed afterwards. */
function linkSignals(signals: (AbortSignal | undefined)[], timeoutMs: number) {
  const controller = new AbortController();
  let aborted = false;
  let timedOut = false;
  const abort = () => {
    aborted = true;
    controller.abort();
  };
  const timer = setLongTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const unwatches: (() => void)[] = [];
  for (const signal of signals) {
    if (signal?.aborted) abort();
    else if (signal !== undefined) unwatches.push(onAbort(signal, abort));
  }
  return {
    signal: controller.signal,
    aborted: () => aborted,
    timedOut: () => timedOut,
    dispose() {
      timer.clear();
      for (const unwatch of unwatches) unwatch();
    },
  };
}

/**
 * A request that got no answer within the client's timeoutMs: it may have gone out and run
 * (`mayHaveTakenEffect`, always true).
 */
export class UnansweredError extends StorageUnavailableError {
  constructor(
    message: string,
    options?: {
      /** What caused it, kept as the error's `cause`. */
      cause?: unknown;
    },
  ) {
    super(message, { ...options, mayHaveTakenEffect: true });
  }
}
