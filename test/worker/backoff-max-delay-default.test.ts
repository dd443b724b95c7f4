import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type OutcomeRecord, open, silentLogger, Worker } from '../../src/index.js';

describe('backoff.maxDelay left out', () => {
  it('follows a baseDelay above 60000, as worker.md says', async () => {
    const broker = await open('memory:');
    try {
      const queue = await broker.queue('backoff-default', { maxDeliveries: 5 });
      await queue.publish({ id: 'fails' });
      const worker = new Worker(
        queue,
        async () => {
          throw new Error('not yet');
        },
        { backoff: { baseDelay: 120_000, jitter: 0 }, logger: silentLogger },
      );
      const outcome = new Promise<OutcomeRecord>((resolve) => worker.on('outcome', resolve));
      expect(await worker.runOnce()).toBe(1);
      expect(await outcome).toMatchObject({ outcome: 'retried', delay: 120_000 });
      await worker.close();
    } finally {
      await broker.close();
    }
    const page = readFileSync(new URL('../../docs/worker.md', import.meta.url), 'utf8');
    const defaults = /Defaults:\s+`baseDelay` 1000 ms, `maxDelay` 60 000 ms([^,]*),/.exec(page);
    expect(defaults?.[1]).toMatch(/or `baseDelay`/);
  });
});
