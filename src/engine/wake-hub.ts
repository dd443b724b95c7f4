import type { WakeListener } from './engine.js';

/** The listeners of one engine's wake-ups. */
export class WakeHub {
  private readonly listeners = new Set<WakeListener>();

  add(listener: WakeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  wake(queue: string): void {
    for (const listener of this.listeners) listener(queue);
  }
}
