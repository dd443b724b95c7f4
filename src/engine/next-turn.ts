/**
 * Resolves on the event loop's next turn: timers, I/O and the callbacks already waiting run
 * first. Long work in this process (SQLite statements, a scheduler pass) awaits it between its
 * parts so that it does not hold every request, timer and socket until it ends.
 */
export function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}
