import { markMayHaveTakenEffect } from '../core/errors.js';
import {
  ClockError,
  ClosedError,
  CodedError,
  ConflictError,
  DeadLetterLoopError,
  type LeaseqError,
  type LeaseqErrorCode,
  NotFoundError,
  QueueFullError,
  SchemaTooNewError,
  SessionClosedError,
  StorageLockedError,
  StorageUnavailableError,
  UnsupportedError,
  ValidationError,
} from '../core/index.js';
import { chainOf, doneCountOf, STATUS_BY_CODE, type WireError } from '../wire/index.js';

/**
 * An error only the HTTP edge produces (UNAUTHENTICATED, FORBIDDEN, INVALID_RECEIPT,
 * PAYLOAD_TOO_LARGE, TOO_MANY_REQUESTS, …), or an answer that was not a leaseq error at all.
 */
export class RemoteError extends CodedError<string> {
  constructor(
    /** The code the server sent (`HTTP_<status>` when the answer had none), or PAYLOAD_TOO_LARGE. */
    readonly code: string,
    /** The HTTP status of the answer. */
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A token this client holds no receipt for: it never received that delivery, or forgot it
 * (the receipt book was full). Only the process that received a
 * delivery can settle it by token; another process settles it by receipt (`ackReceipts`).
 */
export class UnknownDeliveryError extends CodedError<'UNKNOWN_DELIVERY'> {
  readonly code = 'UNKNOWN_DELIVERY' as const;
  constructor(
    /** The token no receipt is held for. */
    readonly token: number,
  ) {
    super(`this client holds no receipt for token ${token}; settle it where it was received`);
  }
}

/** Some core errors build their message from fields; the server's message is the truth here. */
function withMessage<T extends Error>(error: T, message: string): T {
  error.message = message;
  return error;
}

/**
 * How a server refuses a field, an operation type or a value it does not know: as an operation
 * (`unknown field "x" of nack`, `type must be one of …`), a request body (`body has an unknown
 * field "x"`) or its schema's list of values (`… must be equal to one of the allowed values`).
 */
const NOT_KNOWN = /unknown field "|type must be one of |must be equal to one of the allowed values/;

/**
 * The message of the server's INVALID_ARGUMENT. This client checks what it sends as the server
 * does, so a field, type or value the server says it does not know is one this client knows:
 * the server is older than the client. The message says so, and which side to upgrade, rather
 * than read as the caller's typo.
 */
function invalidArgument(message: string): string {
  return NOT_KNOWN.test(message)
    ? `${message} (this client knows it: is the server older than the client? Upgrade the server)`
    : message;
}

const CORE_ERRORS: Record<
  LeaseqErrorCode,
  (message: string, error?: Partial<WireError>) => LeaseqError
> = {
  INVALID_ARGUMENT: (message) => new ValidationError(invalidArgument(message)),
  INVALID_CLOCK: (message, error) =>
    withMessage(new ClockError(error?.now, error?.queueTime ?? 0), message),
  SESSION_CLOSED: (message) => withMessage(new SessionClosedError(''), message),
  NOT_FOUND: (message) => new NotFoundError(message),
  // A dead-letter loop (R26) with its way round, as in-process: a DeadLetterLoopError.
  CONFLICT: (message, error) => {
    const chain = chainOf(error);
    return chain === undefined
      ? new ConflictError(message)
      : withMessage(new DeadLetterLoopError(chain), message);
  },
  STORAGE_UNAVAILABLE: (message) => new StorageUnavailableError(message),
  STORAGE_LOCKED: (message) => new StorageLockedError(message),
  SCHEMA_TOO_NEW: (message) => withMessage(new SchemaTooNewError(0, 0, ''), message),
  CLOSED: (message) => new ClosedError(message),
  UNSUPPORTED: (message) => new UnsupportedError(message),
  QUEUE_FULL: (message) => new QueueFullError(message),
};

/**
 * `error` with the `doneCount` the server sent (a redrive, purge or moveJobs that took steps,
 * R20), as the engine's own error has it in-process: read as
 * `(error as { doneCount?: number }).doneCount`.
 */
function withDoneCount<E extends Error>(error: E, wire: Partial<WireError> | undefined): E {
  const doneCount = doneCountOf(wire);
  if (doneCount === undefined) return error;
  return Object.defineProperty(error, 'doneCount', {
    value: doneCount,
    enumerable: true,
    writable: false,
    configurable: true,
  });
}

/**
 * `error` with `mayHaveTakenEffect` where the server sent it (the storage failed while the
 * call's commit was under way), as the engine's own error has it in-process.
 */
function withMaybe<E extends Error>(error: E, wire: Partial<WireError> | undefined): E {
  return wire?.mayHaveTakenEffect === true ? markMayHaveTakenEffect(error) : error;
}

/** Errors made from a server's answer, not by this client (which could not reach it, say). */
const answered = new WeakSet<object>();

function fromServer<E extends Error>(error: E): E {
  answered.add(error);
  return error;
}

/**
 * Whether `error` is one a server answered (an HTTP error answer, a stream error frame or an
 * operation's refusal), rather than one this client made: a STORAGE_UNAVAILABLE it answered
 * means the server is up and its storage failed, not that there was no server to reach.
 */
export function answeredByServer(error: unknown): boolean {
  return typeof error === 'object' && error !== null && answered.has(error);
}

/** The error an error answer stands for: the same core class as in-process, by code. */
export function errorFromResponse(status: number, body: unknown): Error {
  const error = (body as { error?: Partial<WireError> } | undefined)?.error;
  const code = typeof error?.code === 'string' ? error.code : `HTTP_${status}`;
  const message =
    typeof error?.message === 'string' ? error.message : `the server answered ${status}`;
  const core = CORE_ERRORS[code as LeaseqErrorCode];
  return fromServer(
    withMaybe(
      withDoneCount(
        core === undefined ? new RemoteError(code, status, message) : core(message, error),
        error,
      ),
      error,
    ),
  );
}

/**
 * A leaseq server's 404 for a path it has no route for, as a NotFoundError naming `server` (the
 * URL the client was given) and `request` (`POST /v1/queues/jobs/operations`): the URL's path is
 * not the server's (a proxy's prefix missing, or one too many), or the server predates the
 * route. Undefined for any other answer (a missing queue, say).
 */
export function noSuchRouteError(
  server: string,
  request: string,
  status: number,
  body: unknown,
): NotFoundError | undefined {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  if (status !== 404 || error?.code !== 'NOT_FOUND' || error.message !== 'no such route') {
    return undefined;
  }
  return new NotFoundError(
    `the server at ${server} has no route ${request} (it answered 404, no such route): is that the leaseq server's URL, with the path prefix it is served under, and a server as recent as this client?`,
  );
}

/** Whether `body` is an error answer of a leaseq server: `{ error: { code, … } }`. */
export function isLeaseqErrorBody(body: unknown): boolean {
  const error = (body as { error?: unknown } | undefined)?.error;
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { code?: unknown }).code === 'string'
  );
}

/** What came back from a server, as far as a NotLeaseqAnswer message shows it. */
export interface ForeignAnswer {
  /** The HTTP status. */
  status: number;
  /** The body, as text. */
  text: string;
  /** The Content-Type header, when there was one. */
  contentType?: string | undefined;
  /** The Location header of a redirect, when there was one. */
  location?: string | undefined;
  /** true: the body is JSON, not of the shape a leaseq server answers that request with. */
  otherShape?: boolean;
}

/**
 * The error of an answer that no leaseq server gives (an HTML page, a proxy's error page,
 * JSON of another shape): a RemoteError `HTTP_<status>`, the code of an answer without a
 * leaseq code, whose message names the server, the request and what came back. `server` is
 * the URL the client was given; `request` what it asked (`GET /v1/queues`).
 */
export function notLeaseqAnswer(
  server: string,
  request: string,
  answer: ForeignAnswer,
): RemoteError {
  const mediaType = answer.contentType?.split(';')[0]?.trim() || undefined;
  const what = [
    `${answer.status}`,
    ...(mediaType === undefined ? [] : [mediaType]),
    answer.text === ''
      ? 'with an empty body'
      : answer.otherShape
        ? 'of another shape'
        : mediaType === undefined
          ? 'with no content type'
          : '',
  ]
    .filter((part) => part !== '')
    .join(' ');
  const redirect = answer.status >= 300 && answer.status <= 399 ? shownUrl(answer.location) : '';
  const question =
    redirect !== ''
      ? `it redirects to ${redirect}, and the client follows no redirects: give the server's URL as it ends up`
      : answer.status >= 500
        ? `is this a leaseq server's URL, or a proxy in front of one that cannot reach it?`
        : `is this a leaseq server's URL?`;
  return new RemoteError(
    `HTTP_${answer.status}`,
    answer.status,
    `the server at ${server} answered ${request} with ${what}, not a leaseq API answer: ${question}`,
  );
}

/**
 * A redirect's target as its scheme and host alone: its path, query and fragment may hold a
 * secret (a sign-in token), as serverUrlProblem says of a server URL; '' for none.
 */
function shownUrl(location: string | undefined): string {
  if (location === undefined || !URL.canParse(location)) return '';
  const url = new URL(location);
  return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : '/…'}`;
}

/**
 * The error of one refused operation of a batch: an edge error carries the status the same
 * refusal gets as a whole request (0 for a code this client does not know).
 */
export function errorFromWire(error: WireError): CodedError<string> {
  const core = CORE_ERRORS[error.code as LeaseqErrorCode];
  if (core !== undefined) {
    return fromServer(withMaybe(withDoneCount(core(error.message, error), error), error));
  }
  const status = (STATUS_BY_CODE as Readonly<Record<string, number>>)[error.code] ?? 0;
  return fromServer(
    withMaybe(withDoneCount(new RemoteError(error.code, status, error.message), error), error),
  );
}

/**
 * The message of the ClosedError of a call in flight when the client was closed (its request or
 * frame sent, its answer not yet come), which has `mayHaveTakenEffect`.
 */
export const CLOSED_IN_FLIGHT =
  'the client was closed while this call was in flight: it may or may not have taken effect';

/** The message of a ConnectionLostError for a stream connection that dropped. */
export const STREAM_CONNECTION_LOST = 'the stream connection to the server was lost';

/**
 * The connection to the server dropped while a call was in flight (the stream, or an HTTP
 * request that went out and got no answer): the call may or may not have taken effect
 * (`mayHaveTakenEffect`, always true). Retryable: the client connects again (over the stream,
 * with backoff) at the next call; a call that is not idempotent (a publish without an id) may
 * be done twice by a retry.
 */
export class ConnectionLostError extends CodedError<'CONNECTION_LOST'> {
  readonly code = 'CONNECTION_LOST' as const;
  /** Always true: the next call connects again. */
  readonly retryable = true;
  constructor(
    message = 'the connection to the server was lost: the call may or may not have taken effect',
    options?: {
      /** What caused it, kept as the error's `cause`. */
      cause?: unknown;
    },
  ) {
    super(message, { ...options, mayHaveTakenEffect: true });
  }
}
