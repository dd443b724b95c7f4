import { createHash } from 'node:crypto';
import type { QueueMeta } from './catalog.js';
import { invalidParameter } from './errors.js';

/**
 * SQS FIFO queues on leaseq's own features: a MessageGroupId is a leaseq message group (R24:
 * one message of a group in flight at a time, in send order); a MessageDeduplicationId names
 * the job, so a repeated send is a duplicate publish (R4) while the message is in the queue and
 * for the queue's `dedupWindow` after it is deleted — and, once it died, for the
 * de-duplication interval from its send (`resolveFifoSend`); the SequenceNumber is the job's
 * group sequence number (R29).
 */

/** SQS's de-duplication interval, as the `dedupWindow` of every FIFO queue. */
export const FIFO_DEDUP_WINDOW_MS = 300_000;

/** Whether a queue is FIFO: what its CreateQueue said (a queue made through /v1 is standard). */
export function isFifo(meta: QueueMeta | undefined): boolean {
  return meta?.attributes.FifoQueue === 'true';
}

/** MessageGroupId and MessageDeduplicationId: 1 to 128 letters, digits and punctuation. */
const FIFO_ID = /^[!-~]{1,128}$/;

/** Refuses a MessageGroupId or MessageDeduplicationId that SQS refuses. */
export function checkFifoId(parameter: string, value: string): string {
  if (!FIFO_ID.test(value)) {
    throw invalidParameter(
      parameter,
      value,
      `${parameter} can only include alphanumeric and punctuation characters. 1 to 128 in length.`,
    );
  }
  return value;
}

/** ContentBasedDeduplication: the SHA-256 of the body (not of its attributes), as hex. */
export function contentDeduplicationId(body: string): string {
  return createHash('sha256').update(body, 'utf8').digest('hex');
}

/**
 * How many job ids one de-duplication id may have (see `fifoMessageId`): a send that finds
 * every one of them held by a message that died more than the interval ago is refused rather
 * than looking further.
 */
export const FIFO_GENERATIONS = 1000;

/**
 * The leaseq job id of a FIFO message: a name-based UUID (version 8) of the SHA-256 of its
 * queue's key, its de-duplication id — and of its group, with DeduplicationScope
 * messageGroup — and of its generation. The same de-duplication id gives the same job id in a
 * queue for a generation, so a repeated send is a duplicate publish, answered with the
 * original's MessageId; a send made when the id's earlier messages died more than the
 * de-duplication interval ago takes the next generation (see `resolveFifoSend`). Without a
 * queue key, generation 0 hashes the text it always did, so messages stored before generations
 * existed keep their ids. The version digit keeps these ids apart
 * from the random (version 4) ones of standard sends, and the prefix of the hashed text apart
 * from anything else. The id is the same for every later message of the de-duplication id, so
 * it is not the MessageId: each FIFO message carries a random one in its envelope
 * (`messageIdOf`), as SQS gives each message its own.
 */
export function fifoMessageId(
  scope: 'queue' | 'messageGroup',
  groupId: string,
  deduplicationId: string,
  generation = 0,
  /** The queue's `fifoIdKey`; a queue created without one has the ids it always had. */
  queueKey?: string,
): string {
  // Neither id nor a queue key (a queue name, with `#` and a UUID) can hold a NUL (FIFO_ID,
  // QUEUE_NAME), so the parts cannot run into each other, and a generation's text has one part
  // more than generation 0's. A keyed text has `key` where one without a key has its scope,
  // `queue` or `messageGroup`.
  const prefix = queueKey === undefined ? 'leaseq-sqs-fifo' : `leaseq-sqs-fifo\0key\0${queueKey}`;
  const key =
    scope === 'queue'
      ? `${prefix}\0queue\0${deduplicationId}`
      : `${prefix}\0messageGroup\0${groupId}\0${deduplicationId}`;
  const named = generation === 0 ? key : `${key}\0${generation}`;
  return namedUuid(named);
}

/**
 * The MessageId a duplicate of a deleted FIFO message is answered with (`duplicateMessageId`):
 * the deleted message's own went with it, so a UUID named by the queue, the job id and the
 * group sequence number the queue remembers for it (R4, R29) stands in for it.
 */
export function deletedMessageId(
  queue: string,
  jobId: string,
  groupSeq: number | undefined,
): string {
  return namedUuid(`leaseq-sqs-fifo-deleted\0${queue}\0${jobId}\0${groupSeq ?? ''}`);
}

/** A name-based UUID (version 8) of the SHA-256 of `name`. */
function namedUuid(name: string): string {
  const bytes = createHash('sha256').update(name, 'utf8').digest().subarray(0, 16);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x80; // version 8
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80; // RFC 9562 variant
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * A group sequence number (R29) as SQS's SequenceNumber: 20 digits, so that the text sorts as
 * the number does.
 */
export function sequenceNumber(groupSeq: number): string {
  return String(groupSeq).padStart(20, '0');
}
