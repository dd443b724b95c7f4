import { closeSync, fdatasyncSync, fstatSync, openSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { StorageUnavailableError } from '../../core/index.js';

/**
 * Syncs a SQLite database's write-ahead log from outside SQLite: what a commit at
 * `synchronous = FULL` does before it returns (an fdatasync of the WAL file), done after a
 * commit at NORMAL instead. The WAL is appended in commit order and a sync covers the whole
 * file, so one sync makes every commit before it durable. A sync on another descriptor of the
 * same file covers SQLite's writes: they are the file's, not the descriptor's.
 */
export class WalSync {
  private fd: number | undefined;
  /** Absolute, so that a later change of the working directory does not move it. */
  readonly path: string;

  constructor(path: string) {
    this.path = resolve(path);
  }

  /** Blocks until the WAL is on disk, as SQLite's own sync does. */
  sync(): void {
    try {
      fdatasyncSync(this.descriptor());
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
   * write). Opened again if the path now names another file: SQLite deletes the WAL when the
   * last connection to the database closes, and another process's may have been the last.
   */
  private descriptor(): number {
    const named = statSync(this.path);
    if (this.fd !== undefined) {
      const held = fstatSync(this.fd);
      if (held.ino === named.ino && held.dev === named.dev) return this.fd;
      this.close();
    }
    this.fd = openSync(this.path, 'r+');
    return this.fd;
  }
}
