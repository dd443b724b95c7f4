import { closeSync, fstatSync, openSync } from 'node:fs';
import { resolve } from 'node:path';
import { StorageUnavailableError } from '../../core/index.js';

/** How often the database file is checked, in ms. */
const CHECK_EVERY_MS = 1000;

/**
 * Notices the database file being deleted (or replaced by a rename) while it is open. SQLite
 * goes on writing to the unlinked file, every call answering as if nothing happened, and all of
 * it is gone at close: a restart finds no file, or another one. Checked on a timer, not per
 * call: a descriptor of the file has no links left once its name is gone.
 */
export class FileWatch {
  private readonly fd: number;
  private readonly timer: NodeJS.Timeout;
  private lostError: StorageUnavailableError | undefined;

  constructor(path: string, target: string) {
    const absolute = resolve(path);
    this.fd = openSync(absolute, 'r');
    this.timer = setInterval(() => {
      if (this.lostError !== undefined) return;
      try {
        if (fstatSync(this.fd).nlink > 0) return;
      } catch {
        // A descriptor that cannot be read says as much as one without links.
      }
      this.lostError = new StorageUnavailableError(
        `${target}: the database file ${absolute} was deleted or replaced while open; nothing written from now on would be kept, so nothing more is taken: restart on the file that should be there`,
      );
    }, CHECK_EVERY_MS).unref();
  }

  /** The error every call meets once the file is gone, else undefined. */
  get lost(): StorageUnavailableError | undefined {
    return this.lostError;
  }

  close(): void {
    clearInterval(this.timer);
    closeSync(this.fd);
  }
}
