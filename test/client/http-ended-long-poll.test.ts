import { afterEach, describe, expect, it } from 'vitest';
import type { RemoteBroker } from '../../src/client/index.js';
import { open } from '../../src/index.js';
import { startHeldServer } from '../server/held-receives.js';

/**
 * Plain HTTP (`transport: 'http'`): a long poll ended by its own signal or by closing the client
 * ends the server's wait without throwing away an answer the server sent at that very moment.
 * The server holds each long poll until the test answers it (held-receives.ts), so the answer
 * goes out in the same turn as the client stops, before the server can see that stop.
 */

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup() {
  const target = await startHeldServer();
  cleanups.push(() => target.close());
  const jobs = await target.storage.queue('jobs', { visibility: 60_000 });
  await jobs.publish({ id: 'a' });
  const client = (await open(target.baseUrl, { transport: 'http' })) as RemoteBroker;
  cleanups.push(() => client.close());
  return { target, jobs, client, queue: await client.queue('jobs') };
}

describe('plain HTTP: a long poll ended as the server answers it', () => {
  it('by its own signal: the receive answers with what the server sent, which can be settled', async () => {
    const { target, jobs, queue } = await setup();
    const controller = new AbortController();
    const receiving = queue.receive({ wait: 10_000, signal: controller.signal });
    const poll = await target.held();
    poll.answer(await jobs.receive(poll.reserve));
    controller.abort();
    const deliveries = await receiving;
    expect(deliveries.map((delivery) => delivery.id)).toEqual(['a']);
    expect(await jobs.stats()).toMatchObject({ active: 1 });
    expect(await queue.nack(deliveries[0]?.token as number, { attempted: false })).toBe(true);
    expect(await jobs.stats()).toMatchObject({ ready: 1, active: 0, unworked: 1 });
  });

  it('by closing the client: the jobs go back unworked and the receive answers empty', async () => {
    const { target, jobs, client, queue } = await setup();
    const receiving = queue.receive({ wait: 10_000 });
    const poll = await target.held();
    poll.answer(await jobs.receive(poll.reserve));
    await client.close();
    expect(await receiving).toEqual([]);
    expect(await jobs.stats()).toMatchObject({ ready: 1, active: 0, unworked: 1 });
    expect(await jobs.job('a')).toMatchObject({ state: 'ready', deliveryCount: 0 });
  });
});

describe('plain HTTP: a long poll ended while the server waits', () => {
  it('ends the wait on the server too, and the receive answers empty', async () => {
    const { target, jobs, queue } = await setup();
    const controller = new AbortController();
    const receiving = queue.receive({ wait: 10_000, signal: controller.signal });
    const poll = await target.held();
    controller.abort();
    expect(await receiving).toEqual([]);
    // The server took its client for gone: a reservation made now would be given back.
    await expect.poll(() => poll.signal?.aborted).toBe(true);
    expect(await jobs.stats()).toMatchObject({ ready: 1, active: 0 });
  });

  it('is cut when the server neither answers nor ends the connection, and answers empty', async () => {
    const { target, queue } = await setup();
    // A server (or a proxy) that keeps its side open when the client ends its own (a setting
    // of node:http's server its types do not list).
    Object.assign(target.server, { httpAllowHalfOpen: true });
    const controller = new AbortController();
    const receiving = queue.receive({ wait: 60_000, signal: controller.signal });
    const poll = await target.held();
    controller.abort();
    // Cut after a while: not held for the whole wait the poll asked for.
    expect(await receiving).toEqual([]);
    // The server took its client for gone at its end of the connection all the same.
    expect(poll.signal?.aborted).toBe(true);
  });
});
