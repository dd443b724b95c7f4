/**
 * Runs `action` and counts the turns the event loop took meanwhile: a callback that schedules
 * itself again for the next turn (setImmediate) runs once per turn. A long storage call that
 * never lets go shows as one or two; one that yields between its parts, as more.
 */
export async function countingTurns<T>(
  action: () => Promise<T>,
): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let running = true;
  const turn = () => {
    turns += 1;
    if (running) setImmediate(turn);
  };
  setImmediate(turn);
  try {
    const value = await action();
    return { value, turns };
  } finally {
    running = false;
  }
}
