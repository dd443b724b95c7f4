/** What the process reported while `gathering` ran its body. */
export interface ProcessFailures {
  uncaught: unknown[];
  unhandled: unknown[];
}

/**
 * While `body` runs, the process's uncaught exceptions and unhandled rejections are gathered
 * rather than handled by the test runner; its listeners are back in place after.
 */
export async function gathering<T>(body: (seen: ProcessFailures) => Promise<T>): Promise<T> {
  const seen: ProcessFailures = { uncaught: [], unhandled: [] };
  const uncaught = process.listeners('uncaughtException');
  const unhandled = process.listeners('unhandledRejection');
  process.removeAllListeners('uncaughtException');
  process.removeAllListeners('unhandledRejection');
  const onUncaught = (error: unknown) => seen.uncaught.push(error);
  const onUnhandled = (reason: unknown) => seen.unhandled.push(reason);
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUnhandled);
  try {
    return await body(seen);
  } finally {
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUnhandled);
    for (const listener of uncaught) process.on('uncaughtException', listener);
    for (const listener of unhandled) process.on('unhandledRejection', listener);
  }
}
