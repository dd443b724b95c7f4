import { closeSync, fdatasync, fdatasyncSync, openSync } from 'node:fs';
import { resolve } from 'node:path';
import { StorageUnavailableError } from '../../core/index.js';

/**
 * Syncs a SQLite database's write-ahead log from outside SQLite: what a commit at
 * `synchronous = FULL` does before it returns (an fdatasync of the WAL file), done after a
 * commit at NORMAL instead. The WAL is appended in commit order and a sync covers the whole
 * file, so one sync makes every commit before it durable. A sync on another descriptor of the
 * same file covers SQLite's writes: they are the file's, not the descriptor's.
 *
 * `onThreadPool`: the sync runs on libuv's thread pool and the event loop goes on meanwhile,
 * rather than the call blocking it, as SQLite's own sync does. Either way it resolves once the
 * WAL is on disk.
 */
export class WalSync {
  private fd: number | undefined;
  /** Absolute, so that a later change of the working directory does not move it. */
  readonly path: string;

  constructor(
    path: string,
    private readonly onThreadPool = false,
  ) {
    this.path = resolve(path);
  }

  /** Resolves once the WAL is on disk. */
  async sync(): Promise<void> {
    try {
      const fd = this.descriptor();
      if (!this.onThreadPool) {
        fdatasyncSync(fd);
        return;
      }
      await new Promise<void>((done, fail) =>
        fdatasync(fd, (error) => (error === null ? done() : fail(error))),
      );
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new StorageUnavailableError(
        `the write-ahead log ${this.path} could not be synced to disk: ${message}`,
        { cause: error },
      );
    }
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  /**
   * The WAL file's descriptor, opened at the first sync (SQLite creates the file at the first
   * write). Kept: SQLite deletes the WAL only when the last connection to the database closes
   * (https://www.sqlite.org/wal.html), never while the connection that syncs here is open. (A
   * stat per sync to check it measured dearer than it looks: the fdatasync after it took about
   * 35 µs longer, a third of the sync.)
   */
  private descriptor(): number {
    this.fd ??= openSync(this.path, 'r+');
    return this.fd;
  }
}
