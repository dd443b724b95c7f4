/**
 * The queues this process's receivers wait on, with how many wait on each. `first` is called
 * when one begins to wait where none did, `last` when the last one's wait ends.
 */
export class WaitedQueues {
  private readonly counts = new Map<string, number>();

  constructor(private readonly hooks: { first?(): void; last?(): void } = {}) {}

  /** A receiver of `queue` waits from now on; returns the end of its wait (once is enough). */
  watch(queue: string): () => void {
    if (this.counts.size === 0) this.hooks.first?.();
    this.counts.set(queue, (this.counts.get(queue) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.counts.get(queue) ?? 1) - 1;
      if (left > 0) this.counts.set(queue, left);
      else this.counts.delete(queue);
      if (this.counts.size === 0) this.hooks.last?.();
    };
  }

  get size(): number {
    return this.counts.size;
  }

  queues(): string[] {
    return [...this.counts.keys()];
  }

  clear(): void {
    this.counts.clear();
  }
}
