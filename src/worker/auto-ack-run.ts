import {
  DuplicateError,
  errorMessage,
  isInstance,
  type LeaseLossReason,
  LeaseLostError,
  WorkerClosingError,
} from './errors.js';
import { HandlerRun } from './handler-run.js';
import type { RenewalStep } from './lease-renewer.js';
import { ACKED, DUPLICATE } from './outcome-record.js';

/**
 * One job received at most once (`ack: 'auto'`, R22): the queue removed it as it handed it
 * out, so there is no lease to keep and nothing to ack or nack. The handler runs; returning is
 * `acked` (or `duplicate`), throwing is `lost` — reported (the outcome's error log line, the
 * 'outcome' event, `metrics().lastError`) and never retried. Shutdown cannot give the job back:
 * a handler still running when the close timeout passes has its signal fired and the job is
 * `lost` (reason `shutdown`).
 */
export class AutoAckRun extends HandlerRun {
  /** Never under the worker's session: an auto-acked delivery holds no lease there (R22). */
  readonly session = undefined;

  start(): boolean {
    this.runHandler();
    return true;
  }

  /** Shutdown gave up on the handler: the job cannot go back, it is lost. */
  async release(): Promise<void> {
    if (!this.claim()) {
      await this.done();
      return;
    }
    this.abort(
      new WorkerClosingError(
        `worker closing: job ${this.delivery.id} was received at most once and is lost`,
      ),
    );
    this.finish({ outcome: 'lost', reason: 'shutdown' });
  }

  /** No lease, so none to lose: a session's end or a cancel does not concern this job. */
  loseLease(_reason: LeaseLossReason): void {}

  /** No lease, so nothing to renew. */
  renewOnce(): Promise<RenewalStep> {
    return Promise.resolve('stopped');
  }

  get leaseDeadline(): number {
    return this.delivery.deadline;
  }

  extend(): Promise<number> {
    return Promise.reject(new LeaseLostError('auto-ack', this.delivery.id, this.token));
  }

  protected handlerReturned(): void {
    this.finish(this.duplicateMarked ? DUPLICATE : ACKED);
  }

  protected handlerThrew(error: unknown): void {
    if (isInstance(error, DuplicateError)) {
      this.finish({ ...DUPLICATE, reason: errorMessage(error) });
      return;
    }
    const message = errorMessage(error);
    this.deps.metrics.lastError = { id: this.delivery.id, token: this.token, message };
    this.finish({ outcome: 'lost', reason: 'handler-error', error: message });
  }
}
