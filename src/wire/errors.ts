import type { LeaseqErrorCode } from '../core/index.js';

/** Codes only the server's edge produces; the core's codes pass through unchanged. */
export type ServerErrorCode =
  | 'INVALID_RECEIPT'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'REQUEST_TIMEOUT'
  | 'PAYLOAD_TOO_LARGE'
  | 'URI_TOO_LONG'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'TOO_MANY_REQUESTS'
  | 'HEADERS_TOO_LARGE'
  | 'INTERNAL';

/** Every code an error answer of the HTTP API or the stream may carry. */
export type ErrorCode = LeaseqErrorCode | ServerErrorCode;

/**
 * The one table from error code to HTTP status, shared by the server (its answers) and the
 * client (the status of an operation's error inside a batch). SESSION_CLOSED is 410 Gone: the
 * session named in the request ended for good, and repeating the request cannot succeed.
 * QUEUE_FULL (R31) is 409 Conflict: the publish conflicts with the queue's state (as many ready
 * jobs as its maxLength), not with a rate (429) nor a fault of the server (5xx); the same
 * publish succeeds once consumers took jobs.
 */
export const STATUS_BY_CODE: Readonly<Record<ErrorCode, number>> = {
  INVALID_ARGUMENT: 400,
  INVALID_CLOCK: 400,
  INVALID_RECEIPT: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  QUEUE_FULL: 409,
  SESSION_CLOSED: 410,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL: 500,
  UNSUPPORTED: 501,
  STORAGE_UNAVAILABLE: 503,
  STORAGE_LOCKED: 503,
  SCHEMA_TOO_NEW: 503,
  CLOSED: 503,
};
