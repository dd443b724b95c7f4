import type { OutcomeKind } from './outcome.js';

/** One delivery as a handler sees it. Times are milliseconds. */
export interface Job<P = unknown> {
  /** The name of the work: stays the same on every delivery. */
  readonly id: string;
  /** The job's payload, as published. */
  readonly payload: P;
  /** The fencing token of this delivery (R7): later deliveries carry larger ones. */
  readonly token: number;
  /** 1 on the first delivery. */
  readonly deliveryCount: number;
  /** deliveryCount > 1: an earlier delivery may have done some or all of the work. */
  readonly redelivered: boolean;
  /** The lease deadline on the queue's clock (ms). On the context it follows every renewal. */
  readonly deadline: number;
}

/** The handler's handle on its delivery. */
export interface JobContext<P = unknown> extends Job<P> {
  /**
   * Fires when the worker no longer wants the handler to go on: the lease was lost (reason a
   * LeaseLostError) or the worker's close timeout passed (reason a WorkerClosingError). The
   * job's result is then dropped, so stop and undo what you can.
   */
  readonly signal: AbortSignal;
  /**
   * Extends the lease to `visibility` ms from now (default: the worker's lease length), bounded
   * by the queue's maxLease. Returns the new deadline; throws LeaseLostError when the lease is
   * gone (and fires `signal`).
   */
  extend(visibility?: number): Promise<number>;
  /** Reports progress: with `renew: 'on-progress'` the lease may then be renewed. */
  progress(info?: unknown): void;
  /** The work had already been done: the job is acked and counted as a duplicate. */
  duplicate(): void;
}

/**
 * Does the work of one job. Returning (or resolving, whatever the value: `(job) => send(job)`)
 * acks it; throwing chooses another outcome (docs/worker.md).
 */
export type Handler<P = unknown> = (job: Job<P>, ctx: JobContext<P>) => unknown;

/** The final outcome of one delivery, as logged and passed to 'outcome' listeners. */
export interface OutcomeRecord {
  /** The queue's name. */
  queue: string;
  /** The job's id. */
  id: string;
  /** The delivery's token. */
  token: number;
  /** The job's deliveries so far, this one included. */
  deliveryCount: number;
  /** What became of the delivery. */
  outcome: OutcomeKind;
  /** Dead-letter reason, lease-loss reason, or 'retryable'. */
  reason?: string;
  /** The message of what the handler threw, when it threw. */
  error?: string;
  /** Retry delay, ms. */
  delay?: number;
  /** Receipt to settlement, ms (as metrics().processingTime counts it). */
  durationMs: number;
}
