import { afterEach, describe, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { withWrappedQueues } from '../server/helpers.js';
import { FrameClient } from './frames.js';

// A connection that ends closes its sessions together (R12), but no more of them at once than
// maxBatch: the storage runs its calls in order, and thousands of closes sent at once held every
// other call on their queue behind all of them.

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the sessions of a stream connection that ends', () => {
  it('R12 are closed at most maxBatch at a time, and all of them', async () => {
    const real = await open('memory:');
    let running = 0;
    let most = 0;
    const broker = withWrappedQueues(real, (queue: Queue) =>
      Object.assign(Object.create(queue), {
        closeSession: async (session: string): Promise<number> => {
          running += 1;
          most = Math.max(most, running);
          try {
            await new Promise((resolve) => setTimeout(resolve, 5));
            return await queue.closeSession(session);
          } finally {
            running -= 1;
          }
        },
      }),
    );
    const app = await createApp({
      broker,
      receiptSecret: 'test-secret-of-at-least-32-characters',
      limits: { maxBatch: 2 },
    });
    cleanups.push(
      () => real.close(),
      () => app.close(),
    );
    const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    const jobs = await real.queue('jobs');
    const client = await FrameClient.open(baseUrl);
    for (let id = 1; id <= 3; id++) {
      const opened = await client.request({
        type: 'batch',
        id,
        queue: 'jobs',
        operations: [{ type: 'openSession' }, { type: 'openSession' }],
      });
      expect(opened.results.every((result: { ok: boolean }) => result.ok)).toBe(true);
    }
    expect((await jobs.stats()).sessions).toBe(6);
    client.socket.terminate();
    for (let tries = 0; tries < 300 && (await jobs.stats()).sessions > 0; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect((await jobs.stats()).sessions).toBe(0);
    expect(most).toBe(2);
  });
});
