/**
 * Edges the simulation must reach (Antithesis's "sometimes" assertions): a run of many seeds
 * in which one of them never happened explored too little, and fails.
 */
export const REQUIRED_EDGES = [
  /** An ack answered false: its delivery was no longer live. */
  'stale-ack',
  /** An ack at exactly its lease's deadline answered false (R3, R8: deadline <= now expires). */
  'expiry-at-exact-tick',
  /** An ack one tick before its deadline answered true. */
  'ack-one-tick-before-deadline',
  /** A session ended because a delivery was held past its ackTimeout (R16). */
  'session-ack-timeout',
  /** A session ended because its heartbeats stopped (R16). */
  'session-heartbeat-timeout',
  /** A job ended dead by maxDeliveries (R13). */
  'dead-by-max-deliveries',
  /** A job was rejected into the dead set. */
  'dead-by-reject',
  /** A redriven job was delivered again (R14). */
  'redrive-delivered',
  /** A lease ran out and the job was delivered again. */
  'redelivered-after-expiry',
  /** An ack whose answer was lost, sent again. */
  'ack-retried-after-lost-answer',
  /** A renewal (extend) answered null: the lease was gone, the worker let go. */
  'renewal-refused',
  /** A renewal got no answer. */
  'renewal-failed',
  /** A worker crashed holding leases. */
  'worker-crash',
  /** A publish sent again after a lost answer was recognised as a duplicate (R4). */
  'publish-retry-duplicate',
] as const;

export type Edge = (typeof REQUIRED_EDGES)[number];

export class Coverage {
  readonly counts = new Map<Edge, number>();

  hit(edge: Edge): void {
    this.counts.set(edge, (this.counts.get(edge) ?? 0) + 1);
  }

  add(other: Coverage): void {
    for (const [edge, count] of other.counts)
      this.counts.set(edge, (this.counts.get(edge) ?? 0) + count);
  }

  /** Required edges never reached. */
  missing(): Edge[] {
    return REQUIRED_EDGES.filter((edge) => (this.counts.get(edge) ?? 0) === 0);
  }
}
