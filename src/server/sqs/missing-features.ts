import { SqsError } from './errors.js';

/**
 * What some SQS actions and attributes need from leaseq's core that it does not have yet. Each
 * refuses clearly with UnsupportedOperation today; when the core gains the feature, its entry
 * becomes the one call that does it, and the actions using it are done.
 */
export interface MissingFeatures {
  /** FifoQueue=true and what FIFO queues need (one message in flight per group, in order). */
  messageGroups(what: string): never;
}

export const MISSING_FEATURES: MissingFeatures = {
  messageGroups: (what) =>
    refuse(what, 'FIFO queues (message groups delivered one at a time, in order)'),
};

function refuse(what: string, feature: string): never {
  throw new SqsError(
    'UnsupportedOperation',
    `${what} is not supported: leaseq does not have ${feature} yet.`,
  );
}
