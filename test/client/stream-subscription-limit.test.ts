import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { startTestServer } from '../server/helpers.js';
import { fakeStreamServer, READY_LIMITS } from './fake-stream-server.js';

// A receive that waits is served by a subscription, left open once it has its job so that the
// next receive of it is fast. The server takes at most maxSubscriptions of them per connection:
// a client that receives once from more queues than that, one call at a time, ends those that
// nothing uses before it opens another, rather than be refused for them.
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface KeptPrefetch {
  subscription: number | undefined;
  /** The receives waiting in it. */
  waiters: Set<unknown>;
}

/** The subscriptions the client keeps, by their key (queue, visibility, session). */
function kept(client: RemoteBroker): Map<string, KeptPrefetch> {
  const { channel } = client as unknown as { channel: { prefetches: Map<string, KeptPrefetch> } };
  return channel.prefetches;
}

/** The key of a subscription of `queue` with the queue's visibility and no session. */
const keyOf = (queue: string) => JSON.stringify([queue, null, null]);

/** The subscribe frames the server read, from its /metrics. */
async function subscribes(baseUrl: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const line = text
    .split('\n')
    .find(
      (each) =>
        each.startsWith('leaseq_stream_frames_received_total{') &&
        each.includes('type="subscribe"'),
    );
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function clientOf(maxSubscriptions: number) {
  const server = await startTestServer({ limits: { maxSubscriptions } });
  cleanups.push(() => server.close());
  // Held deliveries go back only when made to: nothing here hangs on a timer.
  const client = new RemoteBroker(server.baseUrl, { transport: 'stream', prefetchIdleMs: 60_000 });
  cleanups.push(() => client.close());
  return { server, client };
}

/** Publishes one job on `queue`, receives it with a wait and acks it: its id. */
async function receiveOne(
  client: RemoteBroker,
  queue: string,
  signal?: AbortSignal,
): Promise<string | undefined> {
  const handle = client.handle(queue);
  await handle.publish({ id: `${queue}-job-${Math.random()}` });
  const [job] = await handle.receive({ wait: 5000, signal });
  if (job !== undefined) expect(await handle.ack(job.token)).toBe(true);
  return job?.id;
}

describe('a stream client at the server limit of subscriptions', () => {
  it('receives once from more queues than the limit, ending the least recently used unused subscriptions', async () => {
    const { server, client } = await clientOf(2);
    for (let n = 0; n < 5; n++) {
      await client.createQueue(`q${n}`);
      expect(await receiveOne(client, `q${n}`)).toMatch(new RegExp(`^q${n}-job-`));
    }
    // The two most recent stay open for their next receive; the others were ended.
    expect([...kept(client).keys()]).toEqual([keyOf('q3'), keyOf('q4')]);
    expect(await subscribes(server.baseUrl)).toBe(5);
  });

  it('keeps a consumer subscription and that of repeated receives on one queue', async () => {
    const { server, client } = await clientOf(2);
    for (const queue of ['worked', 'once-1', 'once-2']) await client.createQueue(queue);
    const consumer = new AbortController();
    cleanups.push(() => consumer.abort());
    expect(await receiveOne(client, 'worked', consumer.signal)).toBeDefined();
    const worked = kept(client).get(keyOf('worked'))?.subscription;
    expect(worked).toBeDefined();
    expect(await receiveOne(client, 'once-1')).toBeDefined();
    // The least recently used is the consumer one, watched: the one-off receive is ended.
    expect(await receiveOne(client, 'once-2')).toBeDefined();
    expect([...kept(client).keys()].sort()).toEqual([keyOf('once-2'), keyOf('worked')]);
    const once = kept(client).get(keyOf('once-2'))?.subscription;
    for (let round = 0; round < 3; round++) {
      expect(await receiveOne(client, 'worked', consumer.signal)).toBeDefined();
      expect(await receiveOne(client, 'once-2')).toBeDefined();
    }
    // Neither subscribed again: the same subscriptions served every receive.
    expect(kept(client).get(keyOf('worked'))?.subscription).toBe(worked);
    expect(kept(client).get(keyOf('once-2'))?.subscription).toBe(once);
    expect(await subscribes(server.baseUrl)).toBe(3);
  });

  it('opens several at once at the limit, each ending an unused one of its own', async () => {
    const { server, client } = await clientOf(3);
    for (let round = 0; round < 3; round++) {
      const names = [0, 1, 2].map((n) => `r${round}-${n}`);
      for (const name of names) {
        await client.createQueue(name);
        await client.handle(name).publish({ id: name });
      }
      const received = await Promise.all(
        names.map((name) => client.handle(name).receive({ wait: 5000 })),
      );
      expect(received.map((deliveries) => deliveries.map((delivery) => delivery.id))).toEqual(
        names.map((name) => [name]),
      );
      for (const [index, name] of names.entries()) {
        expect(await client.handle(name).ack(received[index]?.[0]?.token ?? 0)).toBe(true);
      }
      expect([...kept(client).keys()].sort()).toEqual(names.map(keyOf));
    }
    expect(await subscribes(server.baseUrl)).toBe(9);
  });

  it('ends one holding a pushed job after those holding nothing, giving that job back unworked', async () => {
    const { server, client } = await clientOf(2);
    for (const queue of ['holding', 'empty', 'next', 'last']) await client.createQueue(queue);
    const holding = client.handle('holding');
    await holding.publishBatch([{ id: 'first' }, { id: 'second' }]);
    const [first] = await holding.receive({ wait: 5000 });
    expect(first?.id).toBe('first');
    expect(await holding.ack(first?.token ?? 0)).toBe(true);
    // The credit that ack gave back brings `second`, held for the next receive.
    const stored = server.broker.handle('holding');
    await expect.poll(async () => (await stored.stats()).active).toBe(1);
    expect(await receiveOne(client, 'empty')).toBeDefined();
    // `holding` is the least recently used, but holds a job: `empty` is ended instead.
    expect(await receiveOne(client, 'next')).toBeDefined();
    expect([...kept(client).keys()].sort()).toEqual([keyOf('holding'), keyOf('next')]);
    expect(await stored.stats()).toMatchObject({ active: 1, ready: 0 });
    // A receive waits on `next`: only `holding` is left to end, and what it held goes back,
    // not worked (R33).
    const stop = new AbortController();
    cleanups.push(() => stop.abort());
    const waiting = client.handle('next').receive({ wait: 60_000, signal: stop.signal });
    await expect.poll(() => kept(client).get(keyOf('next'))?.waiters.size).toBe(1);
    expect(await receiveOne(client, 'last')).toBeDefined();
    expect([...kept(client).keys()].sort()).toEqual([keyOf('last'), keyOf('next')]);
    expect(await stored.stats()).toMatchObject({ active: 0, ready: 1, unworked: 1 });
    stop.abort();
    expect(await waiting).toEqual([]);
    const [second] = await holding.receive({ wait: 5000 });
    expect(second).toMatchObject({ id: 'second', deliveryCount: 1 });
  });

  it('is still refused past the limit when every subscription is in use', async () => {
    const { client } = await clientOf(1);
    await client.createQueue('busy');
    await client.createQueue('other');
    const stop = new AbortController();
    cleanups.push(() => stop.abort());
    const waiting = client.handle('busy').receive({ wait: 60_000, signal: stop.signal });
    await expect.poll(() => kept(client).get(keyOf('busy'))?.waiters.size).toBe(1);
    await expect(client.handle('other').receive({ wait: 5000 })).rejects.toMatchObject({
      code: 'TOO_MANY_REQUESTS',
    });
    stop.abort();
    expect(await waiting).toEqual([]);
  });

  it('gives back unworked what is pushed to a subscription it ends to make room', async () => {
    // A server that takes one subscription per connection, pushes a job at each subscribe,
    // and one more to a subscription as it ends it (pushed as its unsubscribe came in).
    const frames: string[] = [];
    const url = await fakeStreamServer((socket) => {
      socket.send(
        JSON.stringify({
          type: 'ready',
          version: '1',
          limits: { ...READY_LIMITS, maxSubscriptions: 1 },
        }),
      );
      const open = new Map<number, string>();
      let pushed = 0;
      const push = (subscription: number, queue: string) => {
        pushed += 1;
        socket.send(
          JSON.stringify({
            type: 'deliveries',
            subscription,
            now: Date.now(),
            deliveries: [
              {
                receipt: `receipt-${queue}-${pushed}`,
                token: pushed,
                id: `${queue}-${pushed}`,
                payload: null,
                deadline: Date.now() + 60_000,
                deliveryCount: 1,
                redelivered: false,
              },
            ],
          }),
        );
      };
      socket.on('message', (data) => {
        const frame = JSON.parse(String(data));
        switch (frame.type) {
          case 'subscribe':
            frames.push(`subscribe ${frame.queue}`);
            if (open.size >= 1) {
              socket.send(
                JSON.stringify({
                  type: 'error',
                  id: frame.id,
                  error: { code: 'TOO_MANY_REQUESTS', message: 'one subscription at most' },
                }),
              );
              return;
            }
            open.set(frame.id, frame.queue);
            socket.send(
              JSON.stringify({
                type: 'subscribed',
                id: frame.id,
                subscription: frame.id,
                prefetch: frame.prefetch,
              }),
            );
            push(frame.id, frame.queue);
            return;
          case 'unsubscribe': {
            frames.push(`unsubscribe ${open.get(frame.subscription)}`);
            push(frame.subscription, open.get(frame.subscription) ?? '');
            open.delete(frame.subscription);
            socket.send(
              JSON.stringify({
                type: 'unsubscribed',
                id: frame.id,
                subscription: frame.subscription,
              }),
            );
            return;
          }
          case 'batch':
            frames.push(`batch ${frame.queue} ${JSON.stringify(frame.operations)}`);
            socket.send(
              JSON.stringify({
                type: 'results',
                id: frame.id,
                results: frame.operations.map((operation: { type: string }) => ({
                  ok: true,
                  value: operation.type === 'ack' ? [true] : true,
                })),
              }),
            );
        }
      });
    }, cleanups);
    const client = new RemoteBroker(url, { transport: 'stream', prefetchIdleMs: 60_000 });
    cleanups.push(() => client.close());
    const first = client.handle('first');
    const [job] = await first.receive({ wait: 60_000 });
    expect(job?.id).toBe('first-1');
    expect(await first.ack(job?.token ?? 0)).toBe(true);
    const next = await client.handle('second').receive({ wait: 60_000 });
    expect(next.map((delivery) => delivery.id)).toEqual(['second-3']);
    expect(frames).toEqual([
      'subscribe first',
      'batch first [{"type":"ack","receipts":["receipt-first-1"]}]',
      'unsubscribe first',
      'batch first [{"type":"nack","receipt":"receipt-first-2","attempted":false}]',
      'subscribe second',
    ]);
    expect([...kept(client).keys()]).toEqual([keyOf('second')]);
  });
});
