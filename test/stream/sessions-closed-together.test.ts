import { afterEach, describe, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/index.js';
import { RemoteBroker } from '../../src/client/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { withWrappedQueues } from '../server/helpers.js';
import { until } from '../until.js';

// R12 over the stream: a connection that ends closes every session opened over it, and their
// deliveries are ready again at once. The closes go to the storage together, so a close that
// takes long (a busy storage, many sessions) holds back none of the others.

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the sessions of a stream connection that ends', () => {
  it('R12 are closed together, none waiting for the close of another', async () => {
    const real = await open('memory:');
    const closing: string[] = [];
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Every close of a session is held until the gate opens.
    const broker = withWrappedQueues(real, (queue: Queue) =>
      Object.assign(Object.create(queue), {
        closeSession: async (session: string): Promise<number> => {
          closing.push(session);
          await gate;
          return queue.closeSession(session);
        },
      }),
    );
    const app = await createApp({ broker, receiptSecret: 'test-secret-of-at-least-32-characters' });
    cleanups.push(
      () => real.close(),
      () => app.close(),
      () => release(),
    );
    const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    const jobs = await real.queue('jobs');
    await jobs.publish({ id: 'a', payload: 1 });
    await jobs.publish({ id: 'b', payload: 2 });

    const client = new RemoteBroker(baseUrl, { transport: 'stream' });
    cleanups.push(() => client.close());
    const queue = await client.queue('jobs');
    const first = await queue.openSession({});
    const second = await queue.openSession({});
    expect((await queue.receive({ session: first })).map((job) => job.id)).toEqual(['a']);
    expect((await queue.receive({ session: second })).map((job) => job.id)).toEqual(['b']);
    await client.close();

    // Both closes are under way while the first is still held.
    await until(() => closing.length === 2, { what: 'both sessions closing', tries: 300 });
    expect(closing).toHaveLength(2);
    release();
    for (let tries = 0; tries < 300 && (await jobs.stats()).sessions > 0; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const stats = await jobs.stats();
    expect(stats.sessions).toBe(0);
    expect(stats.ready).toBe(2);
  });
});
