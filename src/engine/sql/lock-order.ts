import { byCodeUnits } from '../../core/text.js';

/**
 * The order in which a transaction holding calls of several queues takes their locks, where the
 * storage keeps a lock per queue (PostgreSQL): a queue before the queue it dead-letters into, as
 * a job dying there takes them (R26); otherwise by name. Every process takes the queues of its
 * batches in this order, so that two batches never each hold a queue the other waits for.
 * `deadLetterQueueOf`: each queue's `deadLetterQueue`, as last read.
 */
export function lockOrder(
  names: readonly string[],
  deadLetterQueueOf: ReadonlyMap<string, string | undefined>,
): string[] {
  const queues = new Set(names);
  const targetOf = (name: string) => {
    const target = deadLetterQueueOf.get(name);
    return target !== undefined && target !== name && queues.has(target) ? target : undefined;
  };
  /** How many queues of the batch dead-letter into each one. */
  const sources = new Map<string, number>([...queues].map((name) => [name, 0]));
  for (const name of queues) {
    const target = targetOf(name);
    if (target !== undefined) sources.set(target, (sources.get(target) ?? 0) + 1);
  }
  const order: string[] = [];
  const free = [...queues].filter((name) => sources.get(name) === 0).sort(byCodeUnits);
  for (let name = free.shift(); name !== undefined; name = free.shift()) {
    order.push(name);
    const target = targetOf(name);
    if (target === undefined) continue;
    const left = (sources.get(target) ?? 1) - 1;
    sources.set(target, left);
    if (left === 0) {
      free.push(target);
      free.sort(byCodeUnits);
    }
  }
  // A loop (refused when configured, R26, but two updates may be read half-way): by name.
  const placed = new Set(order);
  for (const name of [...queues].sort(byCodeUnits)) if (!placed.has(name)) order.push(name);
  return order;
}
