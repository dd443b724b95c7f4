import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock, open } from '../../src/index.js';
import { temporaryDirectory } from '../temporary-directory.js';

// Two brokers on one SQLite file stand for two servers (each has its own connection): a receive
// waiting in one must wake when the other publishes, not at the end of its wait.
const dir = temporaryDirectory('leaseq-shared-wake-');

/** Resolves once `clock` has a sleeper, i.e. the receive is parked. */
async function parked(clock: ManualClock): Promise<void> {
  while (clock.waiting === 0) await new Promise((resolve) => setImmediate(resolve));
}

describe('SQLite shared by two processes', () => {
  it('a waiting receive wakes when another connection to the file publishes, time standing still', async () => {
    const url = `sqlite:${join(dir, 'shared.db')}`;
    // Time never moves: only a wake-up can end this receive.
    const clock = new ManualClock(1_000);
    const waiter = await open(url, { clock });
    const publisher = await open(url, { clock });
    try {
      const waiting = await waiter.queue('mail');
      const publishing = await publisher.queue('mail');
      const receiving = waiting.receive({ wait: 10_000 });
      await parked(clock);
      await publishing.publish({ id: 'hello' });
      const bound = new Promise<'not woken'>((resolve) => {
        setTimeout(() => resolve('not woken'), 5_000).unref();
      });
      const deliveries = await Promise.race([receiving, bound]);
      expect(deliveries).not.toBe('not woken');
      expect((deliveries as { id: string }[]).map((delivery) => delivery.id)).toEqual(['hello']);
    } finally {
      await waiter.close();
      await publisher.close();
    }
  });
});
