export { DEAD_LETTER_KINDS, type DeadLetterKind } from './dead-letter-kinds.js';
export {
  ClockError,
  ClosedError,
  CodedError,
  ConflictError,
  DeadLetterLoopError,
  LeaseqError,
  type LeaseqErrorCode,
  NotFoundError,
  QueueFullError,
  SchemaTooNewError,
  SessionClosedError,
  StorageLockedError,
  StorageUnavailableError,
  UnsupportedError,
  ValidationError,
} from './errors.js';
export { LeaseQueue } from './lease-queue.js';
export {
  type AckMode,
  type AckOperation,
  type AckUpToOperation,
  build,
  type CancelOperation,
  type CloseSessionOperation,
  checkedOperations,
  type ExtendOperation,
  type HeartbeatOperation,
  type MoveJobsOperation,
  makesJobsReady,
  type NackDisposition,
  type NackOperation,
  type NackUpToOperation,
  OPERATION_TYPES,
  type OpenSessionOperation,
  type Operation,
  type OperationResults,
  type OperationType,
  type Outcome,
  type PublishJob,
  type PublishOperation,
  type PurgeOperation,
  type PurgeQueueOperation,
  type PurgeQueueResult,
  parseOperation,
  parseOperations,
  type RedriveOperation,
  type ReserveOperation,
  type ResultOf,
  reschedulesReceivers,
  type StatsOperation,
  sessionOf,
} from './operations.js';
export {
  decodePayload,
  encodeJobs,
  encodePayload,
  JSON_PAYLOADS,
  type PayloadCodec,
} from './payload.js';
export type { JobTransfer, QueueLinks } from './queue-links.js';
export {
  checkDeadLetterChain,
  checkDeadLetterChainNow,
  checkQueueName,
  checkSameOptions,
  QUEUE_NAME,
} from './queue-options.js';
export { type BackoffInput, backoffDelay } from './retry.js';
export {
  byCodeUnits,
  checkLookedUpId,
  generatedId,
  hasGeneratedForm,
  isStorableText,
} from './text.js';
export type * from './types.js';
export {
  checkDeadLetterPage,
  checkInspectOptions,
  DEFAULT_DEAD_LETTER_PAGE,
  DEFAULT_QUEUE_OPTIONS,
  deadLetterCursor,
  MAX_DEAD_LETTER_PAGE,
  MAX_ID_LENGTH,
} from './validate.js';
