import pg from 'pg';

/** The queries the pg driver sends while `action` runs: one entry per round trip. */
export async function roundTrips(action: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const text = args[0];
    sent.push(typeof text === 'string' ? text : String((text as { text?: string }).text));
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  try {
    await action();
  } finally {
    pg.Client.prototype.query = original;
  }
  return sent;
}
