import { CodedError, LeaseqError } from '../../core/index.js';
import { mapError, ServerError } from '../errors.js';

/**
 * The SQS error shapes leaseq answers with: HTTP status, the legacy query-protocol code (what
 * `x-amzn-query-error` carries and `err.Code` shows in the SDK), and who is at fault.
 */
const SHAPES = {
  QueueDoesNotExist: [400, 'AWS.SimpleQueueService.NonExistentQueue'],
  QueueNameExists: [400, 'QueueAlreadyExists'],
  ReceiptHandleIsInvalid: [404, 'ReceiptHandleIsInvalid'],
  MessageNotInflight: [400, 'AWS.SimpleQueueService.MessageNotInflight'],
  BatchEntryIdsNotDistinct: [400, 'AWS.SimpleQueueService.BatchEntryIdsNotDistinct'],
  EmptyBatchRequest: [400, 'AWS.SimpleQueueService.EmptyBatchRequest'],
  TooManyEntriesInBatchRequest: [400, 'AWS.SimpleQueueService.TooManyEntriesInBatchRequest'],
  InvalidBatchEntryId: [400, 'AWS.SimpleQueueService.InvalidBatchEntryId'],
  BatchRequestTooLong: [400, 'AWS.SimpleQueueService.BatchRequestTooLong'],
  UnsupportedOperation: [400, 'AWS.SimpleQueueService.UnsupportedOperation'],
  ResourceNotFoundException: [404, 'ResourceNotFoundException'],
  InvalidAttributeName: [400, 'InvalidAttributeName'],
  InvalidAttributeValue: [400, 'InvalidAttributeValue'],
  InvalidMessageContents: [400, 'InvalidMessageContents'],
  InvalidParameterValue: [400, 'InvalidParameterValue'],
  MissingParameter: [400, 'MissingParameter'],
  InvalidAction: [400, 'InvalidAction'],
  MalformedQueryString: [400, 'MalformedQueryString'],
  SerializationException: [400, 'SerializationException'],
  RequestEntityTooLarge: [413, 'RequestEntityTooLarge'],
  AccessDenied: [403, 'AccessDenied'],
  MissingAuthenticationToken: [403, 'MissingAuthenticationToken'],
  InvalidClientTokenId: [403, 'InvalidClientTokenId'],
  SignatureDoesNotMatch: [403, 'SignatureDoesNotMatch'],
  RequestThrottled: [403, 'RequestThrottled'],
  OverLimit: [403, 'OverLimit'],
  ServiceUnavailable: [503, 'ServiceUnavailable'],
  InternalFailure: [500, 'InternalFailure'],
} as const satisfies Record<string, readonly [number, string]>;

export type SqsErrorShape = keyof typeof SHAPES;

/** Every shape an SQS error answer may have (docs/sqs.md lists each with its status). */
export const SQS_ERROR_SHAPES = Object.keys(SHAPES) as SqsErrorShape[];

/** An error answered in SQS's shape. `code` is the shape's name (the SDK's error class). */
export class SqsError extends CodedError<SqsErrorShape> {
  constructor(
    readonly code: SqsErrorShape,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  get status(): number {
    return SHAPES[this.code][0];
  }

  /** The legacy query-protocol code. */
  get legacyCode(): string {
    return SHAPES[this.code][1];
  }

  /** Sender for client errors, Receiver for the server's own failures. */
  get fault(): 'Sender' | 'Receiver' {
    return this.status >= 500 ? 'Receiver' : 'Sender';
  }
}

/** `Value x for parameter P is invalid. Reason: …` as SQS words it. */
export function invalidParameter(name: string, value: unknown, reason: string): SqsError {
  return new SqsError(
    'InvalidParameterValue',
    `Value ${describe(value)} for parameter ${name} is invalid. Reason: ${reason}`,
  );
}

export function missingParameter(name: string): SqsError {
  return new SqsError('MissingParameter', `The request must contain the parameter ${name}.`);
}

export function queueDoesNotExist(cause?: unknown): SqsError {
  return new SqsError(
    'QueueDoesNotExist',
    'The specified queue does not exist.',
    cause === undefined ? undefined : { cause },
  );
}

/** What a leaseq or framework error becomes at the SQS edge; `internal` ones get logged. */
export function toSqsError(error: unknown): { error: SqsError; internal: boolean } {
  if (error instanceof SqsError) return { error, internal: error.status >= 500 };
  const mapped = mapError(error);
  const { message } = mapped.body.error;
  const make = (shape: SqsErrorShape) => ({
    error: new SqsError(shape, message, { cause: error }),
    internal: mapped.internal,
  });
  if (error instanceof ServerError && error.code === 'INVALID_RECEIPT') {
    return make('ReceiptHandleIsInvalid');
  }
  switch (mapped.body.error.code) {
    case 'NOT_FOUND':
      // SQS's own words, as where a queue is looked up by name (a queue deleted mid-call).
      return error instanceof LeaseqError
        ? { error: queueDoesNotExist(error), internal: mapped.internal }
        : make('InvalidAction');
    case 'INVALID_ARGUMENT':
      return make('InvalidParameterValue');
    case 'FORBIDDEN':
      return make('AccessDenied');
    case 'UNAUTHENTICATED':
      return make('MissingAuthenticationToken');
    case 'TOO_MANY_REQUESTS':
      return make('RequestThrottled');
    case 'PAYLOAD_TOO_LARGE':
      return make('RequestEntityTooLarge');
    case 'UNSUPPORTED_MEDIA_TYPE':
      return make('InvalidAction');
    case 'UNSUPPORTED':
      return make('UnsupportedOperation');
    case 'CONFLICT':
      return make('QueueNameExists');
    case 'QUEUE_FULL':
      // The queue's maxLength (R31), set through /v1: SQS's "violates a limit", not retried.
      return make('OverLimit');
    case 'INTERNAL':
      return make('InternalFailure');
    default:
      return make('ServiceUnavailable');
  }
}

function describe(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text === undefined ? 'undefined' : text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
