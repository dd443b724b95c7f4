import { describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { openEngine } from '../../src/engine/index.js';
import { open } from '../../src/index.js';
import { scratchDatabasesOfFile } from '../engine/postgres-scratch.js';

// R2 over PostgreSQL: a broker keeps the database's time, and a step back of that clock is not
// followed by the brokers that run through it (they go on at their pace), so the queues' clocks
// stay ahead of the database's until it catches up. A broker opened then (a server restarted
// after the database's clock was corrected back) took the database's time, behind every queue's:
// in `follow` mode every call ran at the queue's stored time, which stood still until the
// database's clock caught up (no lease, delay or session timeout ran out for the size of the
// step), and with clockMode 'strict' every call was a ClockError. Each database is one of this
// file's own, so no other test's queue clock moves its brokers.

const databases = scratchDatabasesOfFile('clock_behind');
const HOUR = 3_600_000;

/** Leaves queue `jobs` with its clock an hour ahead of the database's, a job leased in it. */
async function ranAhead(url: string): Promise<number> {
  const engine = await openEngine(url);
  const ahead = ((await engine.storageTime?.()) as number) + HOUR;
  const broker = new EngineBroker(engine, { clock: new ManualClock(ahead) });
  try {
    const queue = await broker.queue('jobs', { visibility: 1000 });
    await queue.publish({ id: 'leased-before-restart' });
    await queue.receive();
  } finally {
    await broker.close();
  }
  return ahead;
}

describe('open() over PostgreSQL whose queue clocks are ahead of the database clock', () => {
  it('R2 starts its clock at the latest queue time: a lease and a delay run out after their length', async (context) => {
    const skip = databases.skip();
    if (skip !== undefined) context.skip(skip);
    const url = (await databases.make()).url();
    const ahead = await ranAhead(url);
    const broker = await open(url);
    try {
      expect((broker as EngineBroker).clock.now()).toBeGreaterThanOrEqual(ahead);
      const queue = broker.handle('jobs');
      await queue.publish({ id: 'soon', delay: 50 });
      // Due in 50 ms and 1 s of the queue's time; the queue stood still for the hour before.
      // Each taken on a lease long enough to outlast the test: one that ran out while the loop
      // waited (an event loop late under load) would hand its job out again.
      const received: string[] = [];
      while (received.length < 2) {
        const got = await queue.receive({ max: 2, wait: 20_000, visibility: 60_000 });
        if (got.length === 0) break;
        received.push(...got.map(({ id }) => id));
      }
      expect(received.sort()).toEqual(['leased-before-restart', 'soon']);
    } finally {
      await broker.close();
    }
  });

  it('R2 with clockMode strict, its calls are not refused as behind the queue time', async (context) => {
    const skip = databases.skip();
    if (skip !== undefined) context.skip(skip);
    const url = (await databases.make()).url();
    await ranAhead(url);
    const broker = await open(url, { clockMode: 'strict' });
    try {
      await expect(broker.handle('jobs').publish({ id: 'after-restart' })).resolves.toEqual({
        id: 'after-restart',
        duplicate: false,
      });
    } finally {
      await broker.close();
    }
  });
});
