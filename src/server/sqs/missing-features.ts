import { SqsError } from './errors.js';

/**
 * What some SQS actions and attributes need from leaseq's core that it does not have yet. Each
 * refuses clearly with UnsupportedOperation today; when the core gains the feature, its entry
 * becomes the one call that does it, and the actions using it are done.
 */
export interface MissingFeatures {
  /** RedrivePolicy, ListDeadLetterSourceQueues, message move tasks. */
  deadLetterQueue(what: string): never;
  /** FifoQueue=true and what FIFO queues need (one message in flight per group, in order). */
  messageGroups(what: string): never;
}

export const MISSING_FEATURES: MissingFeatures = {
  deadLetterQueue: (what) =>
    refuse(what, 'dead-letter queues (a queue option that moves dead messages to another queue)'),
  messageGroups: (what) =>
    refuse(what, 'FIFO queues (message groups delivered one at a time, in order)'),
};

function refuse(what: string, feature: string): never {
  throw new SqsError(
    'UnsupportedOperation',
    `${what} is not supported: leaseq does not have ${feature} yet.`,
  );
}
