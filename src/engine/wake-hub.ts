import type { CancelListener, WakeListener } from './engine.js';

/** The listeners of one engine's wake-ups, and of its cancelled deliveries (R28). */
export class WakeHub {
  private readonly listeners = new Set<WakeListener>();
  private readonly cancelListeners = new Set<CancelListener>();

  addCancel(listener: CancelListener): () => void {
    this.cancelListeners.add(listener);
    return () => this.cancelListeners.delete(listener);
  }

  cancelled(queue: string, token: number): void {
    for (const listener of this.cancelListeners) listener(queue, token);
  }

  add(listener: WakeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  wake(queue: string): void {
    for (const listener of this.listeners) listener(queue);
  }
}
