import type { Queue } from '../broker/queue.js';

/** A delivery waiting for its ack's answer. */
export interface AckWaiter {
  readonly token: number;
  /** The queue answered: true when the ack completed the job, false for a stale token (R8). */
  ackAnswered(acked: boolean): void;
  /** The ack call threw: it may or may not have landed. */
  ackFailed(error: unknown): void;
}

/**
 * Coalesces the acks of the jobs settled in one tick (one run of the microtask queue) into one
 * call: `queue.ack(token)` for a single job, `queue.ackMany(tokens)` for several. Each waiter
 * gets its own answer; a failed call fails every ack in it.
 */
export class AckBatcher {
  private pending: AckWaiter[] = [];
  private scheduled = false;

  constructor(private readonly queue: Queue) {}

  add(waiter: AckWaiter): void {
    this.pending.push(waiter);
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 1) {
      const waiter = batch[0] as AckWaiter;
      call(() => this.queue.ack(waiter.token)).then(
        (acked) => waiter.ackAnswered(acked),
        (error: unknown) => waiter.ackFailed(error),
      );
      return;
    }
    const tokens = batch.map((waiter) => waiter.token);
    call(() => this.queue.ackMany(tokens)).then(
      (answers) => {
        for (let index = 0; index < batch.length; index++) {
          (batch[index] as AckWaiter).ackAnswered(answers[index] === true);
        }
      },
      (error: unknown) => {
        for (const waiter of batch) waiter.ackFailed(error);
      },
    );
  };
}

/** A queue call whose synchronous throw becomes a rejection. */
function call<T>(send: () => Promise<T>): Promise<T> {
  try {
    return send();
  } catch (error) {
    return Promise.reject(error);
  }
}
