/**
 * JSON has no Infinity: on the wire an unbounded option (prefetch, maxDeliveries, maxLease,
 * session timeouts) is `null`. These convert between the two spellings. A name option
 * (`deadLetterQueue`) keeps its `null`, which means "none".
 */
export function boundsFromWire<T extends object>(wire: T): { [K in keyof T]: Exclude<T[K], null> } {
  return Object.fromEntries(
    Object.entries(wire).map(([key, value]) => [
      key,
      value === null && !NAMES.has(key) ? Number.POSITIVE_INFINITY : value,
    ]),
  ) as { [K in keyof T]: Exclude<T[K], null> };
}

/** Options that name something (or a mode): their `null` is "none", not "unbounded". */
const NAMES = new Set(['deadLetterQueue', 'overflow']);

export function boundsToWire<T extends object>(options: T): T {
  return Object.fromEntries(
    Object.entries(options).map(([key, value]) => [
      key,
      value === Number.POSITIVE_INFINITY ? null : value,
    ]),
  ) as T;
}
