import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock, open } from '../../src/index.js';
import { countingTurns } from '../event-loop-turns.js';
import { temporaryDirectory } from '../temporary-directory.js';

// broker.statsOfQueues (what /metrics and GET /v1/stats read) reads a few hundred queues at a
// time. On SQLite each read runs in this process: between two of them the event loop must turn,
// or thousands of queues hold every request, timer and socket until the last is read.
const dir = temporaryDirectory('leaseq-stats-turns-');

describe('statsOfQueues on SQLite over many queues', () => {
  it('R17 lets the event loop turn between its reads, and reads every queue', async () => {
    const broker = await open(`sqlite:${join(dir, 'many.db')}`, { durability: 'os' });
    try {
      const names = Array.from({ length: 1_600 }, (_, index) => `q-${index}`);
      await Promise.all(names.map((name) => broker.queue(name)));
      await broker.handle('q-7').publish({ id: 'a' });
      const { value: figures, turns } = await countingTurns(async () =>
        broker.statsOfQueues?.(names),
      );
      expect(figures?.size).toBe(names.length);
      expect(figures?.get('q-7')).toMatchObject({ ready: 1, published: 1 });
      // One turn before the first read (the engine's calls start on the next turn); more only
      // when it lets go between the reads of its 1,600 queues.
      expect(turns).toBeGreaterThanOrEqual(4);
    } finally {
      await broker.close();
    }
  });

  it('R17 lets the event loop turn between the steps of queues with something due', async () => {
    const clock = new ManualClock(1_000);
    const broker = await open(`sqlite:${join(dir, 'due.db')}`, { durability: 'os', clock });
    try {
      const names = Array.from({ length: 450 }, (_, index) => `due-${index}`);
      await Promise.all(names.map((name) => broker.queue(name)));
      await Promise.all(names.map((name) => broker.handle(name).publish({ delay: 10 })));
      // Every queue has a delay ended: each takes a step of its own to count its job ready.
      clock.advance(20);
      const { value: figures, turns } = await countingTurns(async () =>
        broker.statsOfQueues?.(names),
      );
      expect([...(figures?.values() ?? [])].map((stats) => [stats.ready, stats.delayed])).toEqual(
        names.map(() => [1, 0]),
      );
      expect(turns).toBeGreaterThanOrEqual(4);
    } finally {
      await broker.close();
    }
  });
});
