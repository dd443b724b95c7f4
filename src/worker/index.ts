/**
 * The consumer library: a worker that reserves jobs, keeps their leases, runs a handler and
 * settles each job by its outcome; graceful shutdown; the inbox for exactly-once effects.
 */
export {
  AmbiguousError,
  DuplicateError,
  type LeaseLossReason,
  LeaseLostError,
  PermanentError,
  RetryableError,
  WorkerClosingError,
  WorkerError,
  type WorkerErrorCode,
} from './errors.js';
export { type Inbox, type InboxResult, inboxHandler, MemoryInbox } from './inbox.js';
export type { Handler, Job, JobContext, OutcomeRecord } from './job.js';
export type { RenewalStep } from './lease-renewer.js';
export {
  type JsonLoggerOptions,
  jsonLogger,
  type Logger,
  type LogLevel,
  silentLogger,
} from './logger.js';
export type { WorkerMetricsSnapshot } from './metrics.js';
export type { BackoffOptions, RenewPolicy, ResolvedBackoff, WorkerOptions } from './options.js';
export {
  type Decision,
  type DecisionInput,
  decide,
  type HandlerResult,
  OUTCOME_KINDS,
  type OutcomeKind,
} from './outcome.js';
export type { HeartbeatStep } from './session-keeper.js';
export { type CloseOnSignalsOptions, closeOnSignals } from './signals.js';
export { TransactionalInbox } from './transactional-inbox.js';
export {
  type CloseOptions,
  type UntypedQueue,
  Worker,
  type WorkerErrorSource,
  type WorkerEvents,
  type WorkerState,
  work,
} from './worker.js';
