import { describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { freePort } from '../faults/private-postgres.js';

describe('the stream link', () => {
  it('gives a call at most its timeoutMs, the wait before reconnecting included', async () => {
    const client = new RemoteBroker(`http://127.0.0.1:${await freePort()}`, {
      transport: 'stream',
      timeoutMs: 300,
    });
    const queue = client.handle('jobs');
    try {
      // Each failed connection doubles the wait before the next try (50 ms up to 5 s): by the
      // seventh call it is 0.8 s or more, longer than a call may take.
      for (let call = 0; call < 8; call++) {
        const started = performance.now();
        await expect(queue.publish({ id: `job-${call}` })).rejects.toMatchObject({
          code: 'STORAGE_UNAVAILABLE',
        });
        expect(performance.now() - started).toBeLessThan(600);
      }
    } finally {
      await client.close();
    }
  });
});
