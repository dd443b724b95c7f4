import type { Worker } from './worker.js';

export interface CloseOnSignalsOptions {
  /** The signals that close the worker. Default ['SIGTERM', 'SIGINT']. */
  signals?: readonly NodeJS.Signals[];
  /** The close timeout, ms (see Worker.close). Default 30000. A second signal releases at once. */
  timeout?: number;
  /** Called once the worker has closed (e.g. to close the broker), or with the close's error. */
  onClosed?: (error?: unknown) => void;
}

/**
 * Closes the worker gracefully on the first of `signals`; a second signal while it closes
 * releases the remaining jobs at once. Returns the removal of the listeners. While the
 * listeners are installed the signals no longer end the process by themselves: the process
 * ends when its work is done (or when `onClosed` ends it).
 */
export function closeOnSignals(
  worker: Pick<Worker, 'close'>,
  options: CloseOnSignalsOptions = {},
): () => void {
  const { signals = ['SIGTERM', 'SIGINT'], timeout = 30_000, onClosed } = options;
  let first = true;
  const listener = () => {
    // The first signal starts a graceful close; a second one cuts its grace period to zero.
    const closing = worker.close({ timeout: first ? timeout : 0 });
    if (!first) return;
    first = false;
    closing.then(
      () => onClosed?.(),
      (error: unknown) => onClosed?.(error),
    );
  };
  for (const signal of signals) process.on(signal, listener);
  return () => {
    for (const signal of signals) process.off(signal, listener);
  };
}
