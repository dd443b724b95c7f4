/**
 * A count of the turns the event loop takes from `start()` until `stop()`, read as it goes
 * (`turns`): a callback that schedules itself again for the next turn (setImmediate) runs once
 * per turn. Read at each statement a storage call runs, it shows whether the call lets go
 * between its parts.
 */
export class TurnCounter {
  turns = 0;
  private running = false;

  private readonly turn = () => {
    this.turns += 1;
    if (this.running) setImmediate(this.turn);
  };

  start(): void {
    this.running = true;
    setImmediate(this.turn);
  }

  stop(): void {
    this.running = false;
  }
}

/**
 * Runs `action` and counts the turns the event loop took meanwhile (see TurnCounter). A long
 * storage call that never lets go shows as one or two; one that yields between its parts, as
 * more.
 */
export async function countingTurns<T>(
  action: () => Promise<T>,
): Promise<{ value: T; turns: number }> {
  const loop = new TurnCounter();
  loop.start();
  try {
    const value = await action();
    return { value, turns: loop.turns };
  } finally {
    loop.stop();
  }
}
