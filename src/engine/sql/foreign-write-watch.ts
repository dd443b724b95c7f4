/**
 * Wakes this process's waiting receivers when another process commits to the same storage, for
 * engines with no notification channel (SQLite). While at least one receiver waits it reads a
 * version number that changes at every commit of another connection (SQLite's
 * `PRAGMA data_version`) every `intervalMs`; when none waits it does nothing.
 */
export class ForeignWriteWatch {
  private readonly watched = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private version: number | undefined;

  constructor(
    private readonly readVersion: () => number,
    private readonly wake: (queue: string) => void,
    private readonly intervalMs = DEFAULT_FOREIGN_WRITE_POLL_MS,
  ) {}

  /** A receiver of `queue` waits from now on; returns the end of its wait. */
  watch(queue: string): () => void {
    if (this.watched.size === 0) this.begin();
    this.watched.set(queue, (this.watched.get(queue) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.watched.get(queue) ?? 1) - 1;
      if (left > 0) this.watched.set(queue, left);
      else this.watched.delete(queue);
      if (this.watched.size === 0) this.end();
    };
  }

  /** One look: wakes every watched queue when another connection committed since the last. */
  runOnce(): boolean {
    const version = this.readVersion();
    const changed = this.version !== undefined && version !== this.version;
    this.version = version;
    if (changed) for (const queue of [...this.watched.keys()]) this.wake(queue);
    return changed;
  }

  /** Stops watching (the engine closes); waiting receivers then wake on their own timers. */
  close(): void {
    this.watched.clear();
    this.end();
  }

  private begin(): void {
    this.version = this.readVersion();
    this.timer = setInterval(() => {
      try {
        this.runOnce();
      } catch {
        // The storage is closing or unreadable: the receivers' own calls will say so.
      }
    }, this.intervalMs).unref();
  }

  private end(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.version = undefined;
  }
}

/** How often a waiting receiver's process looks for other processes' commits, ms. */
export const DEFAULT_FOREIGN_WRITE_POLL_MS = 50;
