import type { Delivery, InspectView } from '../core/index.js';
import type { Receipts } from './receipts.js';

/**
 * The wire format the server and the remote client share. JSON has no Infinity: on the wire an
 * unbounded option (prefetch, maxDeliveries, maxLease, session timeouts) is `null`. These
 * convert between the two spellings.
 */
export function boundsFromWire<T extends object>(wire: T): { [K in keyof T]: Exclude<T[K], null> } {
  return Object.fromEntries(
    Object.entries(wire).map(([key, value]) => [
      key,
      value === null ? Number.POSITIVE_INFINITY : value,
    ]),
  ) as { [K in keyof T]: Exclude<T[K], null> };
}

export function boundsToWire<T extends object>(options: T): T {
  return Object.fromEntries(
    Object.entries(options).map(([key, value]) => [
      key,
      value === Number.POSITIVE_INFINITY ? null : value,
    ]),
  ) as T;
}

/** A delivery as the API hands it out: the token wrapped in a receipt, and kept as fencingToken. */
export interface WireDelivery {
  receipt: string;
  fencingToken: number;
  id: string;
  payload: unknown;
  deadline: number;
  deliveryCount: number;
  redelivered: boolean;
}

export function deliveryToWire(
  queue: string,
  delivery: Delivery,
  receipts: Receipts,
): WireDelivery {
  return {
    receipt: receipts.issue(queue, delivery.token, delivery.id),
    fencingToken: delivery.token,
    id: delivery.id,
    payload: delivery.payload,
    deadline: delivery.deadline,
    deliveryCount: delivery.deliveryCount,
    redelivered: delivery.redelivered,
  };
}

/** Session ids inside an inspect view become the handles the API gave out for them. */
export function inspectToWire(queue: string, view: InspectView, receipts: Receipts): InspectView {
  return {
    ...view,
    active: view.active.map((entry) =>
      entry.session === undefined
        ? entry
        : { ...entry, session: receipts.issueSession(queue, entry.session) },
    ),
  };
}
