/**
 * Reports the failure of a listener (of an engine's wake-ups, a commit's hooks, a signal's
 * abort) as EventTarget reports its listeners': an uncaught exception, thrown once the code that
 * called it, and the answers it gives, ran. Thrown into that code, it would stop the listeners
 * after it and turn the answer of a call that took effect into a failure, or leave it unanswered.
 * The process sees the listener's own error with its stack; an `uncaughtException` handler that
 * lets it go on leaves the engine whole.
 */
export function reportLater(error: unknown): void {
  queueMicrotask(() => {
    throw error;
  });
}
