import { afterEach, describe, expect, it } from 'vitest';
import { openRemote, type RemoteBroker } from '../../src/client/index.js';
import { silentLogger, work } from '../../src/index.js';
import { MIN_SETTLING, SETTLING_PER_SLOT } from '../../src/worker/worker.js';
import { call, startTestServer, type TestServer } from '../server/helpers.js';
import { until } from '../until.js';

const open: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const each of open.splice(0).reverse()) await each.close();
});

async function setUp(): Promise<{ server: TestServer; client: RemoteBroker }> {
  const server = await startTestServer();
  open.push(server);
  const client = await openRemote(server.baseUrl);
  open.push(client);
  expect(client.transport).toBe('stream');
  return { server, client };
}

describe('the worker over the stream', () => {
  it('keeps its concurrency of jobs flowing from the subscription, within its bound in hand', async () => {
    const { server, client } = await setUp();
    const queue = await client.queue('flow', { visibility: 5000 });
    const count = 300;
    for (let from = 0; from < count; from += 100) {
      await queue.publishBatch(
        Array.from({ length: 100 }, (_, index) => ({ payload: from + index })),
      );
    }
    const done = new Set<number>();
    let running = 0;
    let mostRunning = 0;
    let mostActive = 0;
    const worker = await work(
      queue,
      async (job) => {
        running += 1;
        mostRunning = Math.max(mostRunning, running);
        await new Promise((resolve) => setTimeout(resolve, 2));
        done.add(job.payload as number);
        running -= 1;
      },
      { concurrency: 8, logger: silentLogger },
    );
    const watch = setInterval(async () => {
      const answer = await call(server.baseUrl, 'GET', '/v1/queues/flow/stats');
      mostActive = Math.max(mostActive, answer.body.active ?? 0);
    }, 5);
    await until(() => done.size === count, { what: 'every job done', timeout: 10_000 });
    clearInterval(watch);
    await worker.close();
    expect(mostRunning).toBeLessThanOrEqual(8);
    // The prefetch follows the worker's leases in hand: its 8 handlers' jobs and at most
    // SETTLING_PER_SLOT per slot, or MIN_SETTLING, whose acks are on their way. Nothing piles
    // up in the client beyond that.
    expect(mostActive).toBeLessThanOrEqual(8 + Math.max(SETTLING_PER_SLOT * 8, MIN_SETTLING));
    expect(await queue.stats()).toMatchObject({ ready: 0, active: 0, acks: count });
  });

  it('lowers its prefetch when its handlers slow down, so the client stops hoarding jobs', async () => {
    const { server, client } = await setUp();
    const queue = await client.queue('slowing', { visibility: 30_000 });
    const fast = 600;
    const slow = 200;
    for (let from = 0; from < fast + slow; from += 100) {
      await queue.publishBatch(
        Array.from({ length: 100 }, (_, index) => ({ payload: from + index })),
      );
    }
    let handled = 0;
    const worker = await work(
      queue,
      async () => {
        handled += 1;
        // Fast at first, so that acks in flight raise the prefetch; then 10 ms a job.
        if (handled > fast) await new Promise((resolve) => setTimeout(resolve, 10));
      },
      { concurrency: 4, logger: silentLogger },
    );
    // Leased jobs (the server's count) while the last 80 slow jobs run, well after the change.
    await until(() => handled >= fast + slow - 80, { what: 'all but 80 handled', timeout: 20_000 });
    let mostActive = 0;
    while (handled < fast + slow - 8) {
      const answer = await call(server.baseUrl, 'GET', '/v1/queues/slowing/stats');
      mostActive = Math.max(mostActive, answer.body.active ?? 0);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await until(() => handled === fast + slow, { what: 'every job handled', timeout: 10_000 });
    await worker.close();
    // 4 running, a few settling, and what the freed slots ask for: not the dozens that the
    // fast phase's acks in flight once had in hand.
    expect(mostActive).toBeLessThanOrEqual(12);
    expect(await queue.stats()).toMatchObject({ ready: 0, active: 0, acks: fast + slow });
  });

  it('counts the lease of a job pushed ahead from its push, so it renews in time', async () => {
    const { client } = await setUp();
    const queue = await client.queue('ahead', { visibility: 1000, maxDeliveries: 2 });
    await queue.publishBatch(['a', 'b', 'c'].map((id) => ({ id })));
    const outcomes: string[] = [];
    // One at a time: each next job waits in the client's buffer, its lease running, while the
    // handler before it works 600 ms of its 1000 ms lease.
    const worker = await work(
      queue,
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 600));
      },
      { concurrency: 1, logger: silentLogger },
    );
    worker.on('outcome', (record) => {
      outcomes.push(`${record.id} ${record.outcome} #${record.deliveryCount}`);
    });
    await until(() => outcomes.length === 3, { what: 'three outcomes', timeout: 10_000 });
    await worker.close();
    expect(outcomes).toEqual(['a acked #1', 'b acked #1', 'c acked #1']);
  });

  it('retries a failing job with backoff and dead-letters it after maxDeliveries', async () => {
    const { client } = await setUp();
    const queue = await client.queue('fails', { visibility: 5000, maxDeliveries: 3 });
    await queue.publish({ id: 'bad' });
    let attempts = 0;
    const worker = await work(
      queue,
      async () => {
        attempts += 1;
        throw new Error('no');
      },
      { concurrency: 2, logger: silentLogger, backoff: { baseDelay: 10, maxDelay: 20 } },
    );
    await until(async () => (await queue.stats()).dead === 1, {
      what: 'the job dead',
      timeout: 10_000,
    });
    await worker.close();
    expect(attempts).toBe(3);
    expect((await queue.deadLetters())[0]).toMatchObject({ id: 'bad', deliveryCount: 3 });
  });

  it('gives the jobs in hand back at once when closed, and the client gives back what it held', async () => {
    const { client } = await setUp();
    const queue = await client.queue('close', { visibility: 60_000 });
    await queue.publishBatch(Array.from({ length: 10 }, (_, index) => ({ id: `j${index}` })));
    let started = 0;
    const worker = await work(
      queue,
      async (_job, context) => {
        started += 1;
        await new Promise((resolve) => context.signal.addEventListener('abort', resolve));
        throw new Error('stopped');
      },
      { concurrency: 4, logger: silentLogger },
    );
    await until(() => started === 4, { what: 'four jobs started', timeout: 10_000 });
    expect(await queue.stats()).toMatchObject({ active: 4, ready: 6 });
    await worker.close({ timeout: 0 });
    await client.close();
    const fresh = await openRemote(client.baseUrl);
    open.push(fresh);
    expect(await fresh.handle('close').stats()).toMatchObject({ active: 0, ready: 10 });
  });
});
