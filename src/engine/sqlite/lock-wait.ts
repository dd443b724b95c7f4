import { StorageLockedError } from '../../core/index.js';

/** How long a call waits for another process's write lock before failing, by default. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;

/** The first pause between two tries for a lock another process holds, in ms; doubled each try. */
const FIRST_PAUSE_MS = 1;

/** The longest pause between two tries, in ms. */
const LONGEST_PAUSE_MS = 50;

/**
 * Who may hold the lock a call waited for, as errors say it: not only another process, since each
 * `open()` of a file is a connection of its own (a second one in this process, or one in each of
 * its worker threads, waits for the others' locks as another process's would).
 */
export const LOCK_HOLDER =
  'another connection to it (another process, or another open() of the file in this process or in one of its worker threads)';

/** Where a wait for a lock fails, and how long it may last. */
export interface LockWait {
  /** The storage, as messages name it (`sqlite:/data/q.db`). */
  readonly target: string;
  /** How long to wait for another process's lock (`busyTimeoutMs`); 0 tries once. */
  readonly timeoutMs: number;
}

/** Whether SQLite refused a statement because another connection holds a lock it needs. */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/**
 * Runs `attempt` (a statement that takes a lock of the file) until another process's lock lets
 * it, for up to `wait.timeoutMs` since `firstRefusal` (the first try, which failed with a busy
 * error), then fails with StorageLockedError. SQLite's own busy timeout would wait inside the
 * statement, blocking the event loop (every connection of a server, every timer) for all of
 * it; here the connection's busy timeout is 0 and the pauses between tries are timers, from
 * 1 ms doubling up to 50 ms, each up to a fifth longer at random so that processes waiting for
 * one lock do not retry in step.
 */
export async function retryWhileBusy<T>(
  attempt: () => T,
  wait: LockWait,
  firstRefusal: unknown,
  started = performance.now(),
): Promise<T> {
  let refusal = firstRefusal;
  let pause = FIRST_PAUSE_MS;
  for (;;) {
    const left = wait.timeoutMs - (performance.now() - started);
    if (left <= 0) {
      const message = (refusal as Error | undefined)?.message ?? String(refusal);
      throw new StorageLockedError(
        `${wait.target} is locked by ${LOCK_HOLDER}: its lock was not free within busyTimeoutMs (${wait.timeoutMs} ms; ${message}); nothing was written`,
        { cause: refusal },
      );
    }
    const jittered = pause * (1 + Math.random() / 5);
    await new Promise<void>((resolve) => setTimeout(resolve, Math.min(left, jittered)));
    try {
      return attempt();
    } catch (error) {
      if (!isBusy(error)) throw error;
      refusal = error;
    }
    pause = Math.min(pause * 2, LONGEST_PAUSE_MS);
  }
}

/** Runs `attempt` at once, and while another process's lock refuses it, as retryWhileBusy. */
export async function whenNotBusy<T>(attempt: () => T, wait: LockWait): Promise<T> {
  const started = performance.now();
  try {
    return attempt();
  } catch (error) {
    if (!isBusy(error)) throw error;
    return retryWhileBusy(attempt, wait, error, started);
  }
}
