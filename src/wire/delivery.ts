import type { Delivery, InspectView } from '../core/index.js';

/**
 * A delivery as the API hands it out: `receipt` settles it (the token, signed for this queue
 * and job, so it cannot be forged); `token` is the fencing token itself (R7), for resources
 * that refuse an older owner.
 */
export interface WireDelivery {
  receipt: string;
  token: number;
  id: string;
  payload: unknown;
  deadline: number;
  deliveryCount: number;
  redelivered: boolean;
  /** The job's message group (R24), when it has one. */
  group?: string;
}

/** Wraps tokens and session ids into what the wire carries; the server signs them. */
export interface WireSigner {
  receipt(token: number, jobId: string): string;
  sessionHandle(sessionId: string): string;
}

export function deliveryToWire(delivery: Delivery, signer: WireSigner): WireDelivery {
  return {
    receipt: signer.receipt(delivery.token, delivery.id),
    token: delivery.token,
    id: delivery.id,
    payload: delivery.payload,
    deadline: delivery.deadline,
    deliveryCount: delivery.deliveryCount,
    redelivered: delivery.redelivered,
    ...(delivery.group === undefined ? {} : { group: delivery.group }),
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
