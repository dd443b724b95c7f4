import { byCodeUnits } from '../../core/text.js';

/**
 * The queues a transaction holding calls of several queues locks first, and the order it takes
 * them in, where the storage keeps a lock per queue (PostgreSQL): `names`, and the queue each
 * of them dead-letters into (R26), which a job dying there takes (a nack or a lease end past
 * its retries, an expiry, a drop past `maxLength`). Taken then, after the batch's other queues,
 * it could be held by another process's batch waiting for one of those. A job arriving there
 * runs no R3 (R26): nothing dies on into the queue after it.
 *
 * The order is one every process keeps whatever its batch: the queues furthest from the end of
 * their chain of dead-letter queues first (so a queue before the queue it dead-letters into, as
 * a job dying there takes them, and as a transaction of one queue does), then by name.
 * `deadLetterQueueOf`: each queue's `deadLetterQueue`, as last read, for `names` and every queue
 * their chains lead to (a queue missing from it has none). A loop (refused when configured, but
 * two updates may be read half-way) ends where a queue comes round again.
 */
export function lockOrder(
  names: readonly string[],
  deadLetterQueueOf: ReadonlyMap<string, string | undefined>,
): string[] {
  const queues = new Set(names);
  for (const name of names) {
    const target = deadLetterQueueOf.get(name);
    if (target !== undefined) queues.add(target);
  }
  const steps = new Map<string, number>();
  for (const name of queues) {
    const seen = new Set([name]);
    for (let next = deadLetterQueueOf.get(name); next !== undefined && !seen.has(next); ) {
      seen.add(next);
      next = deadLetterQueueOf.get(next);
    }
    steps.set(name, seen.size);
  }
  return [...queues].sort((a, b) => (steps.get(b) ?? 0) - (steps.get(a) ?? 0) || byCodeUnits(a, b));
}
