export * from './errors.js';
export { LeaseQueue } from './lease-queue.js';
export { type BackoffInput, backoffDelay } from './retry.js';
export type * from './types.js';
export { DEFAULT_QUEUE_OPTIONS, MAX_ID_LENGTH } from './validate.js';
