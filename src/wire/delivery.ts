import type { Delivery, InspectView } from '../core/index.js';

/**
 * A delivery as the API hands it out: `receipt` settles it (the token, signed for this queue
 * and job, so it cannot be forged); `token` is the fencing token itself (R7), for resources
 * that refuse an older owner.
 */
export interface WireDelivery {
  /** What settles the delivery: its token, signed for this queue and job. */
  receipt: string;
  /** The delivery's fencing token (R6, R7). */
  token: number;
  /** The job's id. */
  id: string;
  /** The job's payload, as published. */
  payload: unknown;
  /** When the lease ends, on the queue's clock (ms). */
  deadline: number;
  /** The job's deliveries so far, this one included (R6, R33). */
  deliveryCount: number;
  /** true when the job was delivered before: deliveryCount > 1. */
  redelivered: boolean;
  /** The job's message group (R24), when it has one. */
  group?: string;
  /**
   * How long (ms) the delivery's lease had already run when the server sent it: a reservation
   * its storage answered late, or one held while other work committed. Absent when none.
   */
  leaseAge?: number;
}

/** Wraps tokens and session ids into what the wire carries; the server signs them. */
export interface WireSigner {
  receipt(token: number, jobId: string): string;
  sessionHandle(sessionId: string): string;
  /** How long the delivery's lease has run by now (see WireDelivery.leaseAge); 0: none. */
  leaseAge?(delivery: Delivery): number;
}

export function deliveryToWire(delivery: Delivery, signer: WireSigner): WireDelivery {
  const leaseAge = signer.leaseAge?.(delivery) ?? 0;
  return {
    receipt: signer.receipt(delivery.token, delivery.id),
    token: delivery.token,
    id: delivery.id,
    payload: delivery.payload,
    deadline: delivery.deadline,
    deliveryCount: delivery.deliveryCount,
    redelivered: delivery.redelivered,
    ...(delivery.group === undefined ? {} : { group: delivery.group }),
    ...(leaseAge > 0 ? { leaseAge } : {}),
  };
}

export function deliveryFromWire(wire: WireDelivery): Delivery {
  return {
    token: wire.token,
    id: wire.id,
    payload: wire.payload,
    deadline: wire.deadline,
    deliveryCount: wire.deliveryCount,
    redelivered: wire.redelivered,
    ...(wire.group === undefined ? {} : { group: wire.group }),
  };
}

/** The most entries of each list one `GET …/inspect?limit=` answers (a larger limit is a 400). */
export const MAX_INSPECT_LIMIT = 1000;

/** Session ids inside an inspect view become the handles the API gave out for them. */
export function inspectToWire(view: InspectView, signer: WireSigner): InspectView {
  return {
    ...view,
    active: view.active.map((entry) =>
      entry.session === undefined
        ? entry
        : { ...entry, session: signer.sessionHandle(entry.session) },
    ),
  };
}
