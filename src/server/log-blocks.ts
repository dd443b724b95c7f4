import type { DestinationStream } from 'pino';

/** Where the blocks go: standard output, a file, a test's array of lines. */
export interface LogOutput {
  write(text: string): unknown;
}

/**
 * Log lines gathered into writes of at least `blockBytes`, not one write per line: a busy
 * server logs a few lines per job (R17), and standard output redirected to a file or a pipe is
 * written synchronously, one system call per write. `flush` writes what is gathered; the
 * server calls it on a timer, after its start-up line and at exit.
 */
export class LogBlocks implements DestinationStream {
  private pending = '';

  constructor(
    private readonly output: LogOutput,
    private readonly blockBytes: number,
  ) {}

  write(line: string): void {
    this.pending += line;
    if (this.pending.length >= this.blockBytes) this.flush();
  }

  /** Writes the lines gathered so far (pino's `logger.flush` calls it). */
  flush(done?: (error?: Error) => void): void {
    if (this.pending !== '') {
      const text = this.pending;
      this.pending = '';
      try {
        this.output.write(text);
      } catch (error) {
        // Standard output closed: the lines have nowhere to go, and that is not the server's.
        done?.(error instanceof Error ? error : new Error(String(error)));
        return;
      }
    }
    done?.();
  }
}
