import { WaitedQueues } from './waited-queues.js';

/**
 * Wakes this process's waiting receivers when another process commits to the same storage, for
 * engines with no notification channel (SQLite). While at least one receiver waits it reads a
 * version number that changes at every commit of another connection (SQLite's
 * `PRAGMA data_version`) every `intervalMs`; when none waits it does nothing.
 */
export class ForeignWriteWatch {
  private readonly watched = new WaitedQueues({
    first: () => this.begin(),
    last: () => this.end(),
  });
  private timer: NodeJS.Timeout | undefined;
  private version: number | undefined;
  /** The read as the wait began failed: the first read that succeeds wakes every watched queue. */
  private unknown = false;

  constructor(
    private readonly readVersion: () => number,
    private readonly wake: (queue: string) => void,
    private readonly intervalMs = DEFAULT_FOREIGN_WRITE_POLL_MS,
  ) {}

  /** A receiver of `queue` waits from now on; returns the end of its wait. */
  watch(queue: string): () => void {
    return this.watched.watch(queue);
  }

  /** One look: wakes every watched queue when another connection committed since the last. */
  runOnce(): boolean {
    const version = this.readVersion();
    const changed = this.unknown || (this.version !== undefined && version !== this.version);
    this.unknown = false;
    this.version = version;
    if (changed) for (const queue of this.watched.queues()) this.wake(queue);
    return changed;
  }

  /** Stops watching (the engine closes); waiting receivers then wake on their own timers. */
  close(): void {
    this.watched.clear();
    this.end();
  }

  private begin(): void {
    try {
      this.version = this.readVersion();
    } catch {
      // Unreadable for a moment (SQLite answers SQLITE_BUSY_RECOVERY while another process
      // recovers the file after a crash): the receiver waits all the same, rather than its
      // receive failing with the driver's untyped error, and since a commit meanwhile would go
      // unseen, the first read that succeeds wakes every watched queue.
      this.version = undefined;
      this.unknown = true;
    }
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
    this.unknown = false;
  }
}

/** How often a waiting receiver's process looks for other processes' commits, ms. */
export const DEFAULT_FOREIGN_WRITE_POLL_MS = 50;
