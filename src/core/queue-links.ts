import type { Attempt, DeadLetterOrigin } from './types.js';

/** A job leaving one queue for another (R26): what the receiving queue keeps of it. */
export interface JobTransfer {
  /** The job's id, kept: the receiving queue refuses it when present or remembered (R4). */
  readonly id: string;
  /** The payload as the queues keep it (see PayloadCodec), passed on unchanged. */
  readonly payload: unknown;
  /** When the job was published (ms), kept across moves. */
  readonly publishedAt: number;
  /** Its deliveries that did not end in an ack (R14), kept. */
  readonly history: readonly Attempt[];
  /** Set when the job moves by dying (dead-lettering); a move by `moveJobs` clears it. */
  readonly origin: DeadLetterOrigin | undefined;
  /** Kept for life (R23): 0 to 9. */
  readonly priority: number;
  /** Kept for life (R24): the job joins the back of its group in the receiving queue. */
  readonly group: string | undefined;
}

/**
 * How a queue reaches the other queues of its engine, in the same step (R26). A `LeaseQueue`
 * is one queue; the engine that holds several connects each to the others through this.
 */
export interface QueueLinks {
  /**
   * Takes the job into `queue` as ready, at the back, with deliveryCount 0, in the same step.
   * False when it cannot (no such queue, or the id is present or remembered there): the job
   * then stays where it is.
   */
  admit(queue: string, now: number, transfer: JobTransfer): boolean;
}
