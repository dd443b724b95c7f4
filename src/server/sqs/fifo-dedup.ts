import type { Queue } from '../../broker/index.js';
import type { JobView, PublishResult } from '../../core/index.js';
import type { QueueMeta } from './catalog.js';
import type { SqsServices } from './context.js';
import { existingQueue, formerDeadLetterQueues, jobOf } from './dead-letter-history.js';
import { messageIdOf } from './envelope.js';
import { SqsError } from './errors.js';
import {
  deletedMessageId,
  FIFO_DEDUP_WINDOW_MS,
  FIFO_GENERATIONS,
  fifoMessageId,
  isFifo,
} from './fifo.js';
import type { PreparedSend } from './send.js';

/**
 * Where a FIFO queue's job ids are held: the queue itself and, when it has one, its
 * dead-letter queue (where its messages go on dying, R26, with their ids), and the dead-letter
 * queues it had until less than the de-duplication interval ago (a message sent within it may
 * have died there); and the time of the sends, on the broker's clock (publish times are on it).
 */
export interface DedupPlace {
  queue: Queue;
  deadLetterQueue: Queue | undefined;
  formerDeadLetterQueues: readonly Queue[];
  now: number;
}

/**
 * What a send comes to: a publish under a free job id, or a duplicate of a held message,
 * answered with that message's MessageId.
 */
export type ResolvedSend =
  | { publish: PreparedSend['publish']; duplicate?: undefined }
  | { duplicate: PublishResult & { messageId: string }; publish?: undefined };

/** The queue's place, read once per request (its dead-letter queues only on a FIFO queue). */
export async function dedupPlace(
  sqs: SqsServices,
  queue: Queue,
  meta: QueueMeta | undefined,
): Promise<DedupPlace> {
  const now = sqs.services.now();
  if (!isFifo(meta)) {
    return { queue, deadLetterQueue: undefined, formerDeadLetterQueues: [], now };
  }
  const { deadLetterQueue } = await queue.options();
  const former: Queue[] = [];
  for (const name of formerDeadLetterQueues(meta, deadLetterQueue, now - FIFO_DEDUP_WINDOW_MS)) {
    const place = await existingQueue(sqs, name);
    if (place !== undefined) former.push(place);
  }
  return {
    queue,
    // Deleted: it holds nothing, and a message that dies stays in the queue's dead set (R26).
    deadLetterQueue:
      deadLetterQueue === undefined ? undefined : await existingQueue(sqs, deadLetterQueue),
    formerDeadLetterQueues: former,
    now,
  };
}

/**
 * The job id a FIFO send takes (SQS: a send is a duplicate within the 5-minute
 * de-duplication interval after a send with its de-duplication id; leaseq: also while that
 * message is in the queue). The de-duplication id names one id per generation k = 0, 1, …
 * (`fifoMessageId`); the send takes the first that is free:
 *
 * - free (neither the queue nor its dead-letter queues hold it): published under it — a
 *   publish the queue answers as a duplicate (an id deleted within its `dedupWindow`, R4) is a
 *   duplicate send;
 * - held by the queue alive (ready, delayed, in flight, waiting in its group): a duplicate;
 * - held dead by the queue (R14, R30), or by its dead-letter queue (a message of this queue
 *   that died there, R26): a duplicate while its publish is within the interval, else the next
 *   generation — a message that died keeps its id in a dead set indefinitely, so without
 *   another id a later send would be a duplicate forever, or, the dead-letter queue holding the
 *   id, would die into the queue's own dead set where no SQS call sees it;
 * - held by the dead-letter queue for another queue (or sent to it directly): not this
 *   queue's message, but its id is taken where this queue's messages die: the next generation;
 * - held by a dead-letter queue the queue had until less than the interval ago (a
 *   SetQueueAttributes replaced or removed it): as by its dead-letter queue when it is a
 *   message of this queue, else free (this queue's messages no longer die there).
 *
 * So the first send of a fresh id costs one lookup in the queue and one in each of those
 * dead-letter queues. An id freed out of order (a dead message removed through /v1 while a
 * later one of its de-duplication id is in the queue) is taken again first: the later one is
 * not seen.
 */
export async function resolveFifoSend(
  place: DedupPlace,
  prepared: PreparedSend,
): Promise<ResolvedSend> {
  const key = prepared.fifoKey;
  if (key === undefined) return { publish: prepared.publish };
  for (let generation = 0; generation < FIFO_GENERATIONS; generation++) {
    const id =
      generation === 0
        ? prepared.publish.id
        : fifoMessageId(key.scope, key.groupId, key.deduplicationId, generation, key.queueKey);
    const held = await holder(place, id);
    if (held === undefined) return { publish: { ...prepared.publish, id } };
    if (held === 'elsewhere') continue;
    if (held.alive || withinInterval(held.view, place.now)) {
      const { groupSeq, payload } = held.view;
      return {
        duplicate: {
          id,
          duplicate: true,
          messageId: messageIdOf(id, payload),
          ...(groupSeq === undefined ? {} : { groupSeq }),
        },
      };
    }
  }
  throw new SqsError(
    'InternalFailure',
    `No job id is free for MessageDeduplicationId ${key.deduplicationId}: each of its ${FIFO_GENERATIONS} job ids is held by a dead message of the queue or its dead-letter queue. Purge or redrive the dead messages of ${place.queue.name} (/v1/queues/${place.queue.name}/dead-letters) to free them.`,
  );
}

/**
 * The MessageId of the message a FIFO publish was a duplicate of (R4): the one it holds — sent
 * meanwhile by another send of its de-duplication id, or earlier in the same batch. A message
 * deleted within the queue's `dedupWindow` is gone, its MessageId with it: the answer is then
 * a UUID named by the queue, the job id and the SequenceNumber the queue remembers, the same
 * for every duplicate of that message.
 */
export async function duplicateMessageId(queue: Queue, result: PublishResult): Promise<string> {
  const view = await queue.job(result.id);
  if (view !== undefined) return messageIdOf(view.id, view.payload);
  return deletedMessageId(queue.name, result.id, result.groupSeq);
}

type Held = { view: JobView; alive: boolean } | 'elsewhere' | undefined;

async function holder(place: DedupPlace, id: string): Promise<Held> {
  const here = await place.queue.job(id);
  if (here !== undefined) return { view: here, alive: here.state !== 'dead' };
  const mine = (view: JobView | undefined) => view?.origin?.queue === place.queue.name;
  if (place.deadLetterQueue !== undefined) {
    const there = await jobOf(place.deadLetterQueue, id);
    if (there !== undefined) return mine(there) ? { view: there, alive: false } : 'elsewhere';
  }
  // Where this queue's messages no longer die, only its own dead messages count.
  for (const former of place.formerDeadLetterQueues) {
    const there = await jobOf(former, id);
    if (there !== undefined && mine(there)) return { view: there, alive: false };
  }
  return undefined;
}

/**
 * Whether a message was sent less than the de-duplication interval ago (`publishedAt` is kept
 * across moves, R26). A job stored before publish times were kept was sent long ago.
 */
function withinInterval(view: JobView, now: number): boolean {
  return view.publishedAt !== undefined && now - view.publishedAt < FIFO_DEDUP_WINDOW_MS;
}
