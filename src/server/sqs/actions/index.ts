import type { ActionTable } from './action.js';
import { DEAD_LETTER_ACTIONS } from './dead-letter-actions.js';
import { QUEUE_ACTIONS } from './queue-actions.js';
import { RECEIPT_ACTIONS } from './receipt-actions.js';
import { RECEIVE_ACTIONS } from './receive-action.js';
import { SEND_ACTIONS } from './send-actions.js';

/** Every SQS action leaseq answers, by name. */
export const SQS_ACTIONS: ActionTable = {
  ...QUEUE_ACTIONS,
  ...SEND_ACTIONS,
  ...RECEIVE_ACTIONS,
  ...RECEIPT_ACTIONS,
  ...DEAD_LETTER_ACTIONS,
};
