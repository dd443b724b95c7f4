import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { silentLogger, work } from '../../src/worker/index.js';
import { startTestServer } from '../server/helpers.js';

/**
 * A worker over the stream whose handlers are slow (100 ms or more) gets no credit for the acks
 * it has on their way: credit for them would have the server push it a job that then waits in
 * its buffer, leased, for the whole of its next handler, while other consumers of the queue
 * have none. Its next job comes once its ack is answered, as with a RabbitMQ prefetch of its
 * concurrency.
 */
const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** A counter of the server's /metrics, summed over the lines that name `label`. */
async function metric(baseUrl: string, name: string, label: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) || !line.includes(label)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

describe('a stream worker of concurrency 1 with a slow handler', () => {
  it('holds no job unstarted while its handler runs: another consumer takes the next one', async () => {
    const server = await startTestServer();
    closing.push(() => server.close());
    const client = new RemoteBroker(server.baseUrl, {
      transport: 'stream',
      prefetchIdleMs: 60_000,
    });
    closing.push(() => client.close());
    const other = new RemoteBroker(server.baseUrl, { transport: 'http' });
    closing.push(() => other.close());
    const queue = await client.queue('jobs', { visibility: 30_000 });
    await queue.publishBatch([{ id: 'j1' }, { id: 'j2' }, { id: 'j3' }]);

    let secondStarted: () => void = () => {};
    const second = new Promise<void>((resolve) => {
      secondStarted = resolve;
    });
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const handled: string[] = [];
    const worker = await work(
      queue,
      async (job) => {
        handled.push(job.id);
        // Slow: its ack goes out 150 ms after the job was handed out.
        if (job.id === 'j1') await new Promise((resolve) => setTimeout(resolve, 150));
        else {
          secondStarted();
          await gate;
        }
      },
      { concurrency: 1, logger: silentLogger },
    );
    closing.push(async () => {
      release();
      await worker.close({ timeout: 1000 });
    });
    await second;
    // A frame of the same connection behind everything the worker sent so far.
    await queue.stats();
    // The prefetch stayed at the concurrency: no credit for the ack of j1 on its way.
    expect(
      await metric(server.baseUrl, 'leaseq_stream_frames_received_total', 'type="credit"'),
    ).toBe(0);
    // So j3 is ready, not leased to the busy worker, and another consumer gets it at once.
    const taken = await (await other.queue('jobs')).receive({ max: 1 });
    expect(taken.map((delivery) => delivery.id)).toEqual(['j3']);
    expect(handled).toEqual(['j1', 'j2']);
  });
});
