/** The warnings the process emits until `stop`, which returns their names and messages. */
export function collectWarnings() {
  const seen: string[] = [];
  const listener = (warning: Error) => seen.push(`${warning.name}: ${warning.message}`);
  process.on('warning', listener);
  return {
    stop: () => {
      process.off('warning', listener);
      return seen;
    },
  };
}
