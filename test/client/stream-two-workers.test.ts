import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { silentLogger, type WorkerOptions, work } from '../../src/worker/index.js';
import { startTestServer } from '../server/helpers.js';

/**
 * Two workers of one stream client on one queue, with settings that give each a subscription
 * of its own: neither ends the other's when it begins to wait, so they subscribe a few times
 * for thousands of jobs, not once every few jobs, and give nothing back.
 */
const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

const JOBS = 2000;

/** A counter of the server's /metrics, summed over the lines that name `label` if given. */
async function metric(baseUrl: string, name: string, label?: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (label !== undefined && !line.includes(label)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

describe('two workers of one stream client on one queue', () => {
  it.each([
    [
      'different visibilities',
      { concurrency: 4, visibility: 30_000 },
      { concurrency: 4, visibility: 45_000 },
    ],
    [
      'concurrency 1 and 32, different visibilities',
      { concurrency: 1, visibility: 30_000 },
      { concurrency: 32, visibility: 45_000 },
    ],
    ['concurrency 1 and 32', { concurrency: 1 }, { concurrency: 32 }],
  ] as [string, WorkerOptions, WorkerOptions][])(
    'keep their subscriptions (%s)',
    async (_, first, second) => {
      const server = await startTestServer();
      closing.push(() => server.close());
      const client = new RemoteBroker(server.baseUrl, { transport: 'stream' });
      closing.push(() => client.close());
      const queue = await client.queue('jobs', { visibility: 30_000 });
      for (let at = 0; at < JOBS; at += 100) {
        await queue.publishBatch(Array.from({ length: 100 }, (_, n) => ({ id: `j${at + n}` })));
      }
      let handled = 0;
      let done: () => void = () => {};
      const allDone = new Promise<void>((resolve) => {
        done = resolve;
      });
      const handler = async () => {
        handled += 1;
        if (handled === JOBS) done();
        await new Promise((resolve) => setImmediate(resolve));
      };
      const workers = await Promise.all(
        [first, second].map((options) =>
          work(queue, handler, { ...options, logger: silentLogger }),
        ),
      );
      closing.push(async () => {
        for (const worker of workers) await worker.close({ timeout: 1000 });
      });
      await allDone;
      const subscribes = await metric(
        server.baseUrl,
        'leaseq_stream_frames_received_total',
        'type="subscribe"',
      );
      // One each (one in all when they share it; 2 measured), a few more at worst: not one
      // every few dozen jobs (20 to 130 measured when a wait of one ended the other's).
      expect(subscribes).toBeLessThanOrEqual(10);
      for (const worker of workers) await worker.close({ timeout: 1000 });
      expect(await queue.stats()).toMatchObject({ acks: JOBS, ready: 0, active: 0 });
    },
  );
});
