import { type ParseArgsConfig, parseArgs } from 'node:util';

/**
 * A bench script's command line, parsed strictly: `--help` (or `-h`) prints `usage` and exits
 * 0; an unknown option, a missing value or a stray argument prints what is wrong and `usage`,
 * and exits 2 (a mistyped option must not run a long benchmark with its default instead).
 */
export function benchArgs<T extends ParseArgsConfig>(
  usage: string,
  config: T,
  argv: readonly string[] = process.argv.slice(2),
): ReturnType<typeof parseArgs<T>> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(usage.trim());
    process.exit(0);
  }
  try {
    // The same config with the arguments given: its results are typed by the config alone.
    return parseArgs({ ...config, args: [...argv], strict: true }) as ReturnType<
      typeof parseArgs<T>
    >;
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${usage.trim()}`);
    process.exit(2);
  }
}

/** A whole-number option ≥ `min`, or a clear exit 2 (not a NaN run). */
export function wholeNumber(name: string, text: string | undefined, min = 0): number {
  const value = Number(text);
  if (text === undefined || text.trim() === '' || !Number.isSafeInteger(value) || value < min) {
    console.error(`--${name} must be a whole number ≥ ${min}, got ${JSON.stringify(text)}`);
    process.exit(2);
  }
  return value;
}

/** A comma-separated list of whole numbers ≥ `min` (e.g. `--concurrency 1,32`). */
export function wholeNumbers(name: string, text: string | undefined, min = 0): number[] {
  return (text ?? '').split(',').map((part) => wholeNumber(name, part, min));
}
