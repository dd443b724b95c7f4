import { constants } from 'node:os';
import { isMainThread } from 'node:worker_threads';
import { addUnknownOptions } from '../core/errors.js';
import { UnsupportedError, ValidationError } from '../core/index.js';
import { show } from '../core/validate.js';
import type { Worker } from './worker.js';

/** What `closeOnSignals` takes. */
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
 * ends when its work is done (or when `onClosed` ends it). Once the worker has closed (by a
 * signal, its own `close()`, or its broker's), they are removed: a signal then does what it
 * did before, rather than nothing for the rest of the process's life. Bad options are a ValidationError
 * here, before any listener is installed: found only at the signal, they would leave the
 * process running with its signals taken and its worker not closing. In a worker thread it
 * throws UnsupportedError: Node delivers signals to the main thread only, so its listeners would
 * never fire, and the thread's jobs would be cut off with the process instead of given back.
 */
export function closeOnSignals(
  worker: Pick<Worker, 'close'> & Partial<Pick<Worker, 'on' | 'state'>>,
  options: CloseOnSignalsOptions = {},
): () => void {
  // Found only at the signal, a worker without close() would throw from the listener.
  if (typeof (worker as Partial<Pick<Worker, 'close'>> | null)?.close !== 'function') {
    throw new ValidationError(`closeOnSignals: worker must have close(), got ${show(worker)}`);
  }
  checkOptions(options);
  if (!isMainThread) {
    throw new UnsupportedError(
      'closeOnSignals: a worker thread gets no signals (Node delivers them to the main thread only), so its worker would never be closed by one: call closeOnSignals in the main thread, and have it tell each thread to close its worker (a postMessage the thread answers with worker.close())',
    );
  }
  const { timeout = 30_000, onClosed } = options;
  // Each once: a signal named twice would count one delivery of it as a second signal.
  const signals = [...new Set(options.signals ?? ['SIGTERM', 'SIGINT'])];
  let first = true;
  const listener = () => {
    // The first signal starts a graceful close; a second one cuts its grace period to zero.
    const closing = worker.close({ timeout: first ? timeout : 0 });
    if (!first) return;
    first = false;
    closing.then(
      () => {
        remove();
        onClosed?.();
      },
      (error: unknown) => {
        remove();
        onClosed?.(error);
      },
    );
  };
  let stopWatching: (() => void) | undefined;
  const remove = () => {
    for (const signal of signals) process.off(signal, listener);
    stopWatching?.();
  };
  try {
    for (const signal of signals) process.on(signal, listener);
  } catch (error) {
    // One the platform refuses (checked above, but platforms differ): none is left taken.
    remove();
    throw error;
  }
  // Closed otherwise (its own close(), its broker's): nothing is left for a signal to close.
  if (typeof worker.on === 'function') stopWatching = worker.on('closed', remove);
  if (worker.state === 'closed') remove();
  return remove;
}

const OPTION_NAMES = new Set(['signals', 'timeout', 'onClosed']);
/** Signals no listener can take: process.on throws for them. */
const UNCATCHABLE = new Set(['SIGKILL', 'SIGSTOP']);

function checkOptions(options: unknown): asserts options is CloseOnSignalsOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(`closeOnSignals: options must be an object, got ${show(options)}`);
  }
  const issues: string[] = [];
  addUnknownOptions(issues, Object.keys(options), (name) => OPTION_NAMES.has(name));
  const { signals, timeout, onClosed } = options as Record<string, unknown>;
  if (timeout !== undefined && (!Number.isSafeInteger(timeout) || (timeout as number) < 0)) {
    issues.push(`timeout must be an integer ≥ 0 (ms), got ${show(timeout)}`);
  }
  if (
    signals !== undefined &&
    (!Array.isArray(signals) ||
      signals.length === 0 ||
      !Array.from(signals).every(
        (signal) =>
          typeof signal === 'string' &&
          Object.hasOwn(constants.signals, signal) &&
          !UNCATCHABLE.has(signal),
      ))
  ) {
    issues.push(
      `signals must be a non-empty list of names of signals a process can catch ('SIGTERM'), got ${show(signals)}`,
    );
  }
  if (onClosed !== undefined && typeof onClosed !== 'function') {
    issues.push(`onClosed must be a function, got ${show(onClosed)}`);
  }
  if (issues.length > 0)
    throw new ValidationError(issues.map((issue) => `closeOnSignals: ${issue}`));
}
