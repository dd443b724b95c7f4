import { describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { openEngine } from '../../src/engine/index.js';
import { open } from '../../src/index.js';
import { scratchDatabasesOfFile } from '../engine/postgres-scratch.js';

// R2 over PostgreSQL: an ack on the one-statement path records the queue's time in a tally row
// of its own (leaseq_tallies), not in the queue row, until the next other call on the queue
// folds it in. A broker opened while the database's clock is behind must start at the queue's
// time with its tallies: started at the queue row's clock alone, it was behind the last ack,
// and with clockMode strict every call on the queue was refused until that clock caught up.

const databases = scratchDatabasesOfFile('clock_tallies');
const HOUR = 3_600_000;
const MINUTE = 60_000;

/** The last call on queue `jobs` an ack ten minutes after its receive, an hour ahead. */
async function ackedAhead(url: string): Promise<number> {
  const engine = await openEngine(url);
  const start = ((await engine.storageTime?.()) as number) + HOUR;
  const clock = new ManualClock(start);
  const broker = new EngineBroker(engine, { clock });
  try {
    const queue = await broker.queue('jobs', { visibility: HOUR });
    await queue.publish({ id: 'acked-last' });
    const [delivery] = await queue.receive();
    clock.advance(10 * MINUTE);
    expect(await queue.ack(delivery?.token ?? 0)).toBe(true);
  } finally {
    await broker.close();
  }
  return start + 10 * MINUTE;
}

describe('open() over PostgreSQL whose last call on a queue ahead of the database clock was an ack', () => {
  it('R2 with clockMode strict, starts at the time of that ack and its calls are not refused', async (context) => {
    const skip = databases.skip();
    if (skip !== undefined) context.skip(skip);
    const url = (await databases.make()).url();
    const ackedAt = await ackedAhead(url);
    const broker = await open(url, { clockMode: 'strict' });
    try {
      expect((broker as EngineBroker).clock.now()).toBeGreaterThanOrEqual(ackedAt);
      await expect(broker.handle('jobs').publish({ id: 'after-restart' })).resolves.toEqual({
        id: 'after-restart',
        duplicate: false,
      });
    } finally {
      await broker.close();
    }
  });
});
