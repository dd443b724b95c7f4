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
  private readonly absolute: string;
  private readonly fd: number;
  private readonly timer: NodeJS.Timeout;
  private lostError: StorageUnavailableError | undefined;

  /** `lost` is called at each check once the file is gone, the first one included. */
  constructor(
    path: string,
    private readonly target: string,
    lost?: () => void,
  ) {
    this.absolute = resolve(path);
    this.fd = openSync(this.absolute, 'r');
    this.timer = setInterval(() => {
      if (this.check() !== undefined) lost?.();
    }, CHECK_EVERY_MS).unref();
  }

  /** The error every call meets once the file is gone, else undefined. */
  get lost(): StorageUnavailableError | undefined {
    return this.lostError;
  }

  /** `lost`, the file looked at now rather than at the last check of the timer. */
  check(): StorageUnavailableError | undefined {
    if (this.lostError !== undefined) return this.lostError;
    try {
      if (fstatSync(this.fd).nlink > 0) return undefined;
    } catch {
      // A descriptor that cannot be read says as much as one without links.
    }
    this.lostError = new StorageUnavailableError(
      `${this.target}: the database file ${this.absolute} was deleted or replaced while open; nothing written from now on would be kept, so nothing more is taken: restart on the file that should be there`,
    );
    return this.lostError;
  }

  close(): void {
    clearInterval(this.timer);
    closeSync(this.fd);
  }
}
