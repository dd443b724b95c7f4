export interface UntilOptions {
  /** What is awaited, for the error if it does not come: "the server to stop". */
  what: string;
  /** Milliseconds after which a check that still fails throws; 5000 unless given. */
  timeout?: number;
  /** Instead of a timeout: how many checks at most, a failing last one throwing. */
  tries?: number;
  /** Milliseconds between checks; 10 unless given. */
  interval?: number;
}

/**
 * Checks `check` every `interval` ms until it returns (or resolves to) something other than
 * false or undefined, and returns that: true, or the value awaited. A check still failing once
 * `timeout` ms have passed (or on the last of `tries`) throws an error naming `what`; one that
 * throws, or rejects, ends the wait with that error.
 */
export async function until<T>(
  check: () => T | Promise<T>,
  { what, timeout = 5000, tries, interval = 10 }: UntilOptions,
): Promise<Exclude<T, false | undefined>> {
  const deadline = Date.now() + timeout;
  for (let tried = 1; ; tried++) {
    const value = await check();
    if (value !== false && value !== undefined) return value as Exclude<T, false | undefined>;
    if (tries === undefined ? Date.now() > deadline : tried >= tries) {
      const bound = tries === undefined ? `${timeout} ms` : `${tries} checks ${interval} ms apart`;
      throw new Error(`timed out waiting for ${what} (${bound})`);
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}
