/**
 * Resolves once the event loop has read the I/O waiting for it (setImmediate callbacks run
 * after its poll phase). A timer that fires late, behind a blocked loop, runs before the answers
 * that came in meanwhile are read: what it would conclude from an answer not yet seen waits for
 * this turn.
 */
export function ioTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
