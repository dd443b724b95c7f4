import type { Delivery } from '../core/index.js';

/**
 * How long a delivery's lease had already run when its receive answered: a remote client hands
 * out deliveries the server pushed ahead, which waited in its buffer with their lease running.
 * The worker counts a lease's local end from its start, not from the answer.
 */
const ages = new WeakMap<Delivery, number>();

/** Notes that `delivery`'s lease had run `ms` when it was handed out. */
export function noteLeaseAge(delivery: Delivery, ms: number): void {
  if (ms > 0) ages.set(delivery, ms);
}

/** How long `delivery`'s lease had run when it was handed out: 0 unless noted. */
export function leaseAge(delivery: Delivery): number {
  return ages.get(delivery) ?? 0;
}
