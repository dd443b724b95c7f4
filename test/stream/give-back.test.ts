import { afterEach, describe, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/index.js';
import { RemoteBroker } from '../../src/client/index.js';
import { work } from '../../src/worker/index.js';
import { startTestServer } from '../server/helpers.js';
import { until } from '../until.js';

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** A queue whose job dies of its second lease ending, and a stream client of it. */
async function shortLeases() {
  const server = await startTestServer();
  closing.push(() => server.close());
  const jobs = await server.broker.queue('jobs', { visibility: 200, maxDeliveries: 2 });
  const client = new RemoteBroker(server.baseUrl, { transport: 'stream', prefetchIdleMs: 30 });
  closing.push(() => client.close());
  return { jobs, queue: await client.queue('jobs') };
}

/** `later`, published now, is still ready after long enough for two leases to end. */
async function expectStillReady(jobs: Queue): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 700));
  // (Pushed, perhaps, before the unsubscribe arrived: then given back unworked, R33.)
  expect(await jobs.stats()).toMatchObject({ ready: 1, active: 0, dead: 0 });
  expect(await jobs.job('later')).toMatchObject({ state: 'ready', deliveryCount: 0 });
}

describe('deliveries the stream client held and gave back', () => {
  it('R33 go back unworked: no delivery of their jobs, however often, and in their order', async () => {
    const server = await startTestServer();
    closing.push(() => server.close());
    const jobs = await server.broker.queue('jobs', { maxDeliveries: 1, visibility: 60_000 });
    await jobs.publishBatch(Array.from({ length: 16 }, (_, n) => ({ id: `j${n}` })));
    const client = new RemoteBroker(server.baseUrl, { transport: 'stream', prefetchIdleMs: 30 });
    closing.push(() => client.close());
    const queue = await client.queue('jobs');
    // Each round: 4 taken and acked; the credit they give back brings more (4, or fewer once
    // the client lowered its prefetch to what its consumers take, as it may on a busy machine),
    // which nobody takes and which go back after 30 ms. With maxDeliveries 1, any of those
    // counted as a delivery would then be dead of it.
    let givenBack = 0;
    for (let round = 0; round < 3; round += 1) {
      const taken = await queue.receive({ max: 4, wait: 2000 });
      expect(taken.map((d) => d.id)).toEqual([0, 1, 2, 3].map((k) => `j${4 * round + k}`));
      expect(taken.map((d) => d.deliveryCount)).toEqual([1, 1, 1, 1]);
      for (const delivery of taken) expect(await queue.ack(delivery.token)).toBe(true);
      const after = await until(
        async () => {
          const stats = await jobs.stats();
          return stats.nacks > givenBack && stats.active === 0 ? stats : undefined;
        },
        { what: 'the deliveries of the round given back' },
      );
      givenBack = after.nacks;
    }
    const stats = await jobs.stats();
    expect(stats).toMatchObject({ ready: 4, active: 0, dead: 0, acks: 12 });
    // Every delivery given back went back unworked, however many there were.
    expect(stats.unworked).toBe(stats.nacks);
    expect(stats.nacks).toBeGreaterThanOrEqual(3);
    expect((await jobs.inspect()).ready).toEqual(['j12', 'j13', 'j14', 'j15']);
    expect(await jobs.job('j12')).toMatchObject({ state: 'ready', deliveryCount: 0, history: [] });
  });

  it('go back at once when a receive with other settings waits on their queue, not after the idle time', async () => {
    const server = await startTestServer();
    closing.push(() => server.close());
    const jobs = await server.broker.queue('jobs', { visibility: 60_000 });
    await jobs.publishBatch([{ id: 'first' }, { id: 'second' }]);
    // Held deliveries that nobody takes would wait a minute before going back.
    const client = new RemoteBroker(server.baseUrl, {
      transport: 'stream',
      prefetchIdleMs: 60_000,
    });
    closing.push(() => client.close());
    const queue = await client.queue('jobs');
    const [first] = await queue.receive({ wait: 2000 });
    expect(first?.id).toBe('first');
    expect(await queue.ack(first?.token ?? 0)).toBe(true);
    // The credit that ack gave back brings `second` to the receive's subscription, held there.
    await until(async () => (await jobs.stats()).active === 1, { what: 'one active job' });
    // The worker's receives name the queue's visibility: a subscription of their own.
    const ran: string[] = [];
    const worker = await work(queue, async (job) => {
      ran.push(`${job.id} #${job.deliveryCount}`);
    });
    closing.push(() => worker.close());
    await until(async () => ran.length === 1, { what: 'the job run by the worker', timeout: 3000 });
    // Given back unworked (R33): its delivery to the worker is its first.
    expect(ran).toEqual(['second #1']);
    await until(async () => (await jobs.stats()).acks === 2, { what: 'two acks' });
    expect(await jobs.stats()).toMatchObject({ ready: 0, active: 0, unworked: 1 });
  });

  it('a receive whose wait ran out leaves no subscription: the next job goes to whoever waits for it', async () => {
    const server = await startTestServer({ limits: { maxSubscriptions: 2 } });
    closing.push(() => server.close());
    const jobs = await server.broker.queue('jobs', { visibility: 60_000 });
    const idle = new RemoteBroker(server.baseUrl, { transport: 'stream', prefetchIdleMs: 60_000 });
    closing.push(() => idle.close());
    const idleQueue = await idle.queue('jobs');
    // Three visibilities, three subscriptions, on a connection that may hold two at once.
    for (const visibility of [1000, 2000, 3000]) {
      expect(await idleQueue.receive({ wait: 20, visibility })).toEqual([]);
    }
    const other = new RemoteBroker(server.baseUrl, { transport: 'stream' });
    closing.push(() => other.close());
    const receiving = (await other.queue('jobs')).receive({ wait: 5000 });
    // Its subscription opened and its receive parked on the server.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = Date.now();
    await jobs.publish({ id: 'next' });
    expect((await receiving).map((delivery) => delivery.id)).toEqual(['next']);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await jobs.stats()).toMatchObject({ deliveries: 1, unworked: 0 });
  });

  it('a worker closed as it starts leaves no subscription: a job published after waits ready for the next consumer', async () => {
    const { jobs, queue } = await shortLeases();
    // Closed before its first receive's subscribe is answered.
    const worker = await work(queue, async () => {});
    await worker.close();
    await jobs.publish({ id: 'later' });
    await expectStillReady(jobs);
    const ran: string[] = [];
    const next = await work(queue, async (job) => {
      ran.push(`${job.id} #${job.deliveryCount}`);
    });
    closing.push(() => next.close());
    await until(async () => ran.length === 1, { what: 'the job run' });
    expect(ran).toEqual(['later #1']);
  });

  it('a waiting receive aborted before its subscription opened leaves none, and a later receive still subscribes', async () => {
    const { jobs, queue } = await shortLeases();
    for (let round = 0; round < 2; round += 1) {
      const stop = new AbortController();
      const receiving = queue.receive({ wait: 5000, signal: stop.signal });
      setTimeout(() => stop.abort(), 0);
      expect(await receiving).toEqual([]);
    }
    await jobs.publish({ id: 'later' });
    await expectStillReady(jobs);
    const [taken] = await queue.receive({ wait: 2000 });
    expect(taken).toMatchObject({ id: 'later', deliveryCount: 1 });
  });
});
