import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { Prefetch } from '../../src/client/prefetch.js';
import type { StreamLink } from '../../src/client/stream-link.js';
import type { ServerFrame } from '../../src/wire/index.js';
import { silentLogger, work } from '../../src/worker/index.js';
import { startTestServer } from '../server/helpers.js';

// A stream client keeps the client side of a subscription per queue, visibility and session its
// receives wait on. Once one has ended and nothing receives through it, it is forgotten: a
// client that works queue after queue (one made and deleted per tenant or task) would otherwise
// keep one for every queue it ever waited on, for as long as it lives.
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** How many subscriptions the client keeps (a private part of its channel). */
function kept(client: RemoteBroker): number {
  const { channel } = client as unknown as { channel: { prefetches: Map<string, unknown> } };
  return channel.prefetches.size;
}

async function streamClient() {
  const server = await startTestServer();
  cleanups.push(() => server.close());
  const client = new RemoteBroker(server.baseUrl, { transport: 'stream' });
  cleanups.push(() => client.close());
  return client;
}

describe('subscriptions nothing receives through any more', () => {
  it('are not kept once the workers of queues made and deleted one after another closed', async () => {
    const client = await streamClient();
    for (let round = 0; round < 3; round++) {
      const queue = await client.queue(`tenant-${round}`);
      await queue.publish({ id: 'job' });
      let handled: () => void = () => {};
      const done = new Promise<void>((resolve) => {
        handled = resolve;
      });
      const worker = await work(queue, async () => handled(), { logger: silentLogger });
      await done;
      await worker.close();
      await client.deleteQueue(`tenant-${round}`);
    }
    await expect.poll(() => kept(client)).toBe(0);
  });

  it('are not kept once a wait ran out with nothing', async () => {
    const client = await streamClient();
    for (let round = 0; round < 3; round++) {
      const queue = await client.queue(`tenant-${round}`);
      expect(await queue.receive({ wait: 10 })).toEqual([]);
      expect(kept(client)).toBe(0);
    }
  });

  it('are not kept once the server ended them as their queue was deleted', async () => {
    const client = await streamClient();
    for (let round = 0; round < 3; round++) {
      const queue = await client.queue(`tenant-${round}`);
      await queue.publish({ id: 'job' });
      const [job] = await queue.receive({ wait: 5000 });
      expect(await queue.ack(job?.token ?? 0)).toBe(true);
      // The subscription of a receive that got its job stays open for the next one...
      expect(kept(client)).toBe(1);
      // ...until its queue is deleted: the server ends it (NOT_FOUND).
      await client.deleteQueue(`tenant-${round}`);
      await expect.poll(() => kept(client)).toBe(0);
    }
  });
});

describe('the client side of a subscription that ended', () => {
  /** A link that answers every request at once, a new subscription each subscribe. */
  function answeringLink(requests: string[]): StreamLink {
    return {
      knownLimits: async () => ({ maxPrefetch: 100 }),
      connected: true,
      forget: () => {},
      async request(frame: { type: string; prefetch?: number }): Promise<ServerFrame> {
        requests.push(frame.type);
        if (frame.type === 'unsubscribe') return { type: 'unsubscribed', id: 1, subscription: 1 };
        const subscription = requests.length;
        return { type: 'subscribed', id: 1, subscription, prefetch: frame.prefetch ?? 1 };
      },
    } as unknown as StreamLink;
  }

  function prefetchOn(link: StreamLink, idle: () => void): Prefetch {
    return new Prefetch(link, {
      queue: 'jobs',
      visibility: undefined,
      session: undefined,
      idleMs: 60_000,
      release: async () => {},
      idle,
    });
  }

  it('says it may be let go once its consumer stopped and its subscription ended', async () => {
    const requests: string[] = [];
    let idle = 0;
    const prefetch = prefetchOn(answeringLink(requests), () => {
      idle += 1;
    });
    const consumer = new AbortController();
    const waiting = prefetch.take(1, 60_000, consumer.signal);
    await expect.poll(() => requests).toEqual(['subscribe']);
    consumer.abort();
    expect(await waiting).toEqual([]);
    await expect.poll(() => requests).toEqual(['subscribe', 'unsubscribe']);
    await expect.poll(() => idle).toBe(1);
  });

  /** A subscription that was pushed two deliveries, one taken by its receive, then lost. */
  async function holdingAfterLost(idle: () => void): Promise<Prefetch> {
    const requests: string[] = [];
    const prefetch = prefetchOn(answeringLink(requests), idle);
    const receiving = prefetch.take(1, 60_000, undefined);
    await expect.poll(() => requests).toEqual(['subscribe']);
    const now = Date.now();
    const delivery = (id: string) => ({
      receipt: id,
      token: 1,
      id,
      deadline: now + 60_000,
      deliveryCount: 1,
      redelivered: false,
      payload: null,
    });
    prefetch.push({
      type: 'deliveries',
      subscription: 1,
      now,
      deliveries: [delivery('a'), delivery('b')],
    } as Parameters<Prefetch['push']>[0]);
    expect(await receiving).toHaveLength(1);
    // The connection dropped: the subscription is over, the other delivery still held.
    prefetch.lost();
    expect(prefetch.holding).toBe(true);
    return prefetch;
  }

  it('says it may be let go once the last delivery it held after its connection dropped is taken', async () => {
    let idle = 0;
    const prefetch = await holdingAfterLost(() => {
      idle += 1;
    });
    expect(idle).toBe(0);
    expect(prefetch.takeHeld(1)).toHaveLength(1);
    expect(idle).toBe(1);
  });

  it('says it may be let go once the queue purged what it held after its connection dropped', async () => {
    let idle = 0;
    const prefetch = await holdingAfterLost(() => {
      idle += 1;
    });
    prefetch.purged();
    expect(prefetch.holding).toBe(false);
    expect(idle).toBe(1);
  });

  it('is not let go while a receive that came as it ended subscribes again', async () => {
    const requests: string[] = [];
    let idle = 0;
    const prefetch = prefetchOn(answeringLink(requests), () => {
      idle += 1;
    });
    const first = new AbortController();
    const waiting = prefetch.take(1, 60_000, first.signal);
    await expect.poll(() => requests).toEqual(['subscribe']);
    first.abort();
    expect(await waiting).toEqual([]);
    // The end has begun (its unsubscribe on its way): a receive of another consumer comes now.
    const second = new AbortController();
    const next = prefetch.take(1, 60_000, second.signal);
    await expect.poll(() => requests).toEqual(['subscribe', 'unsubscribe', 'subscribe']);
    expect(idle).toBe(0);
    second.abort();
    expect(await next).toEqual([]);
    await expect.poll(() => idle).toBe(1);
  });
});
