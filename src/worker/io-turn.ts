/**
 * Resolves once the event loop has read the I/O waiting for it (setImmediate callbacks run
 * after its poll phase). A timer that fires late, behind a blocked loop, runs before the answers
 * that came in meanwhile are read: what it would conclude from an answer not yet seen waits for
 * this turn.
 */
export function ioTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Resolves after the event loop has been through its timers, its I/O and its immediates: two
 * immediates, since one set from a poll callback runs before the loop's next timers.
 */
export async function fullTurn(): Promise<void> {
  await ioTurn();
  await ioTurn();
}

/**
 * Notices a loop that has not turned for a while: jobs that start one after another through
 * promises alone (a handler that blocks, then the next one's start) never let the loop run its
 * timers or read its sockets, so a session's heartbeat, a lease's renewal and their answers wait
 * for the whole run of them. `due()` says whether `ms` have passed since the loop last turned.
 */
export class TurnWatch {
  private last = performance.now();
  private armed = false;
  private readonly mark = () => {
    this.armed = false;
    this.last = performance.now();
  };

  constructor(private readonly ms: number) {}

  /** Whether the loop has not turned for `ms`; arms the check of the next turn. */
  due(): boolean {
    if (!this.armed) {
      this.armed = true;
      setImmediate(this.mark);
    }
    return performance.now() - this.last >= this.ms;
  }

  /** A full turn of the loop, noted as one. */
  async turn(): Promise<void> {
    await fullTurn();
    this.last = performance.now();
  }
}
