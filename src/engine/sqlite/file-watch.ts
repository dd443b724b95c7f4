import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { StorageUnavailableError } from '../../core/index.js';

/** How often the database file is checked, in ms. */
const CHECK_EVERY_MS = 1000;

/** A file the watch looks at: the database, or one SQLite keeps open beside it. */
export interface WatchedFile {
  /** Its path. */
  readonly path: string;
  /** What was lost and what to do, for the error every call meets once it is gone. */
  readonly gone: (absolute: string) => string;
  /** Called at each check once it is gone, the first one included. */
  readonly lost?: () => void;
}

/**
 * Notices the database file being deleted (or replaced by a rename) while it is open. SQLite
 * goes on writing to the unlinked file, every call answering as if nothing happened, and all of
 * it is gone at close: a restart finds no file, or another one. So for the files SQLite keeps
 * open beside it: it writes on into an unlinked `-wal` as well (whatever was not yet copied into
 * the database is gone at a crash), and a process that opens the database after its `-shm` went
 * makes another one, and the two processes then write the same WAL without seeing each other.
 * Checked on a timer, not per call: a file is gone once its path names no file, or another one.
 * The path is looked at, not a descriptor of the file: closing one would drop the locks SQLite
 * holds on that file for this process.
 */
export class FileWatch {
  private readonly files: {
    readonly file: WatchedFile;
    readonly absolute: string;
    readonly dev: number;
    readonly ino: number;
    gone: boolean;
  }[] = [];
  private readonly timer: NodeJS.Timeout;
  private lostError: StorageUnavailableError | undefined;

  /**
   * Watches `database` and the files `beside` it; one of those not there now is not watched
   * (nothing to tell its file from another by).
   */
  constructor(
    private readonly target: string,
    database: WatchedFile,
    beside: readonly WatchedFile[] = [],
  ) {
    for (const file of [database, ...beside]) {
      const absolute = resolve(file.path);
      const found = statSync(absolute, { throwIfNoEntry: file === database });
      if (found !== undefined) {
        this.files.push({ file, absolute, dev: found.dev, ino: found.ino, gone: false });
      }
    }
    this.timer = setInterval(() => this.check(), CHECK_EVERY_MS).unref();
  }

  /** The error every call meets once a file is gone, else undefined. */
  get lost(): StorageUnavailableError | undefined {
    return this.lostError;
  }

  /**
   * `lost`, the files looked at now rather than at the last check of the timer; calls the
   * `lost` of each file gone.
   */
  check(): StorageUnavailableError | undefined {
    for (const each of this.files) {
      if (!each.gone) each.gone = this.isGone(each);
      if (each.gone) this.lostError ??= this.error(each.file.gone(each.absolute));
    }
    for (const each of this.files) if (each.gone) each.file.lost?.();
    return this.lostError;
  }

  private isGone({ absolute, dev, ino }: { absolute: string; dev: number; ino: number }) {
    let now: { dev: number; ino: number } | undefined;
    try {
      now = statSync(absolute, { throwIfNoEntry: false });
    } catch {
      // Not to be looked at now (its directory made unreadable): not known to be gone.
      return false;
    }
    return now === undefined || now.dev !== dev || now.ino !== ino;
  }

  private error(gone: string): StorageUnavailableError {
    return new StorageUnavailableError(`${this.target}: ${gone}`);
  }

  close(): void {
    clearInterval(this.timer);
  }
}
