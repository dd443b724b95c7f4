import type { CancelListener, ServedWake, WakeListener } from './engine.js';
import { reportLater } from './report-later.js';

/**
 * The listeners of one engine's wake-ups, and of its cancelled deliveries (R28). A listener that
 * throws stops neither the others nor what told them (a commit, another process's wake-up): its
 * error is reported (reportLater).
 */
export class WakeHub {
  private readonly listeners = new Set<WakeListener>();
  private readonly cancelListeners = new Set<CancelListener>();

  /** Registers a listener of cancelled deliveries; returns its removal. */
  addCancel(listener: CancelListener): () => void {
    this.cancelListeners.add(listener);
    return () => this.cancelListeners.delete(listener);
  }

  /** Tells every cancel listener that the delivery `token` of `queue` was cancelled. */
  cancelled(queue: string, token: number): void {
    for (const listener of this.cancelListeners) {
      try {
        listener(queue, token);
      } catch (error) {
        reportLater(error);
      }
    }
  }

  /** Registers a wake-up listener; returns its removal. */
  add(listener: WakeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tells every wake-up listener that jobs of `queue` may have become ready (see WakeListener). */
  wake(queue: string, served?: ServedWake): void {
    for (const listener of this.listeners) {
      try {
        listener(queue, served);
      } catch (error) {
        reportLater(error);
      }
    }
  }
}
