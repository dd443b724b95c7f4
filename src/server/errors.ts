import { CodedError, LeaseqError } from '../core/index.js';
import {
  doneCountToWire,
  type ErrorCode,
  errorToWire,
  maybeToWire,
  type ServerErrorCode,
  STATUS_BY_CODE,
  type WireError,
} from '../wire/index.js';

export { type ErrorCode, type ServerErrorCode, STATUS_BY_CODE };

/** What a client is told for a server-side failure: the detail stays in the server's log. */
const PUBLIC_MESSAGE: Partial<Record<ErrorCode, string>> = {
  INTERNAL: 'internal error',
  STORAGE_UNAVAILABLE: 'the storage is unavailable',
  STORAGE_LOCKED: 'the storage is locked by another writer',
  SCHEMA_TOO_NEW: 'the storage was written by a newer leaseq',
  CLOSED: 'the server is shutting down',
};

/** An error raised by the HTTP edge itself (auth, limits, receipts). */
export class ServerError extends CodedError<ServerErrorCode> {
  constructor(
    /** The error's code; its HTTP status is `STATUS_BY_CODE[code]`. */
    readonly code: ServerErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The body of every error answer of the HTTP API. */
export interface ErrorBody {
  /**
   * The error: its code and message (and a ClockError's fields, a stepped call's doneCount, and
   * mayHaveTakenEffect where the call may or may not have taken effect).
   */
  error: WireError & {
    /** The error's code. */
    code: ErrorCode;
  };
}

export interface MappedError {
  status: number;
  body: ErrorBody;
  /** true when the error is a failure of the server or its storage, to be logged in full. */
  internal: boolean;
}

/** Fastify's own errors (parsing, body limit, validation), by the status it gives them. */
const CODE_BY_FRAMEWORK_STATUS: Readonly<Record<number, ErrorCode>> = {
  400: 'INVALID_ARGUMENT',
  404: 'NOT_FOUND',
  408: 'REQUEST_TIMEOUT',
  413: 'PAYLOAD_TOO_LARGE',
  414: 'URI_TOO_LONG',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  431: 'HEADERS_TOO_LARGE',
  503: 'CLOSED',
};

/**
 * Node's error for a request whose connection closed before its body arrived whole (the client
 * went away, or the server cut a request that did not arrive in time), which Fastify hands on
 * as the body's error: the client's doing, answered (to nobody) as such and not logged as a
 * failure of the server.
 */
function bodyCutShort(error: unknown): boolean {
  return (
    error instanceof Error &&
    error.message === 'aborted' &&
    (error as { code?: unknown }).code === 'ECONNRESET'
  );
}

/** Turns anything thrown while serving a request into the status and `{ error }` body. */
export function mapError(error: unknown): MappedError {
  if (bodyCutShort(error)) {
    return {
      status: STATUS_BY_CODE.INVALID_ARGUMENT,
      body: {
        error: {
          code: 'INVALID_ARGUMENT',
          message: 'the connection closed before the request body arrived whole',
        },
      },
      internal: false,
    };
  }
  const code = codeOf(error);
  const publicMessage = PUBLIC_MESSAGE[code];
  const maybe = maybeToWire(error);
  const message =
    publicMessage === undefined
      ? error instanceof Error
        ? error.message
        : 'internal error'
      : // Behind a public message too, the call's outcome is the caller's to know.
        `${publicMessage}${maybe.mayHaveTakenEffect ? ' while this call was under way: it may or may not have taken effect' : ''}`;
  const internal = publicMessage !== undefined && code !== 'CLOSED';
  // doneCount even behind a public message: the storage failing or the server closing between
  // the steps of a redrive, purge or moveJobs (R20) leaves the jobs of the steps done. So with
  // mayHaveTakenEffect: the storage failing at a commit leaves the call perhaps done.
  const body =
    error instanceof LeaseqError && publicMessage === undefined
      ? { error: { ...errorToWire(error, message), code } }
      : { error: { code, message, ...doneCountToWire(error), ...maybe } };
  return { status: STATUS_BY_CODE[code], body, internal };
}

function codeOf(error: unknown): ErrorCode {
  if (error instanceof LeaseqError || error instanceof ServerError) return error.code;
  const framework = error as { code?: unknown; statusCode?: unknown };
  if (
    typeof framework.code === 'string' &&
    framework.code.startsWith('FST_') &&
    typeof framework.statusCode === 'number'
  ) {
    return CODE_BY_FRAMEWORK_STATUS[framework.statusCode] ?? 'INTERNAL';
  }
  return 'INTERNAL';
}
