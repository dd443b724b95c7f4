import type { Queue } from '../../broker/index.js';
import { type JobView, NotFoundError } from '../../core/index.js';
import type { QueueMeta } from './catalog.js';
import type { SqsServices } from './context.js';

/** How many earlier dead-letter queues a queue's metadata keeps, the newest. */
export const FORMER_DEAD_LETTER_QUEUES_KEPT = 10;

/**
 * The metadata once SetQueueAttributes replaced or removed the queue's dead-letter queue
 * `previous` at `until` (the broker's time): the messages that died into it stay there (R26),
 * so the queue still looks for them there. A queue remembered twice keeps its latest time;
 * only queues in `existing` stay (one deleted holds nothing).
 */
export function rememberFormerDeadLetterQueue(
  meta: QueueMeta,
  previous: string,
  until: number,
  existing: ReadonlySet<string>,
): QueueMeta {
  const kept = (meta.formerDeadLetterQueues ?? []).filter(
    (former) => former.queue !== previous && existing.has(former.queue),
  );
  return {
    ...meta,
    formerDeadLetterQueues: [{ queue: previous, until }, ...kept].slice(
      0,
      FORMER_DEAD_LETTER_QUEUES_KEPT,
    ),
  };
}

/**
 * The dead-letter queues a queue had before its current one (`current`), newest first; with
 * `since`, only those it still had at that time or later.
 */
export function formerDeadLetterQueues(
  meta: QueueMeta | undefined,
  current: string | undefined,
  since = Number.NEGATIVE_INFINITY,
): string[] {
  return (meta?.formerDeadLetterQueues ?? [])
    .filter((former) => former.queue !== current && former.until >= since)
    .map((former) => former.queue);
}

/** The named queue, or undefined when it does not exist (deleted: it holds nothing). */
export async function existingQueue(sqs: SqsServices, name: string): Promise<Queue | undefined> {
  try {
    return await sqs.services.queues.existing(name);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/** The job `id` of `queue`, or undefined when the queue holds none (or was deleted meanwhile). */
export async function jobOf(queue: Queue, id: string): Promise<JobView | undefined> {
  try {
    return await queue.job(id);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}
