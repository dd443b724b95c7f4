import type { WireDelivery, WireOperation, WireOutcome } from '../wire/index.js';

/** What one receive asks the server for; `session` is the handle the server gave out. */
export interface ChannelReceive {
  /** At most this many deliveries; undefined: 1. */
  max: number | undefined;
  /** Lease length of the deliveries (ms); undefined: the queue's visibility. */
  visibility: number | undefined;
  /** The session the deliveries belong to (R16), by the server's handle; undefined: none. */
  session: string | undefined;
  /** 'auto': each job is removed as it is handed out (R22); otherwise leased. */
  ack: 'auto' | 'manual' | undefined;
  /** ms to wait for the first delivery; 0: answer with what is ready now. */
  wait: number;
  /** Cuts the wait short; the receive then answers without an error. */
  signal: AbortSignal | undefined;
}

/**
 * How a remote client's operations travel: plain HTTP requests or the stream. Both coalesce
 * the operations submitted in one tick into one batch per queue.
 */
export interface Channel {
  /**
   * Runs wire operations on the named queue, answered in order. `whole`: a caller's `execute`,
   * one unit of the storage (R20), sent in one batch or refused unsent, never split.
   */
  execute(
    queue: string,
    operations: readonly WireOperation[],
    whole?: boolean,
  ): Promise<WireOutcome[]>;
  /** Reserves deliveries, waiting up to `wait` ms for the first one. */
  receive(queue: string, request: ChannelReceive): Promise<WireDelivery[]>;
  /**
   * Gives back what is held and not handed out, ends the sessions opened through the channel and
   * not closed (R16), and ends the channel; the server is waited for no longer once `signal`
   * aborts.
   */
  close(signal?: AbortSignal): Promise<void>;
  /** true from the moment close() began: receives are refused with CLOSED from then on. */
  readonly closing: boolean;
}
