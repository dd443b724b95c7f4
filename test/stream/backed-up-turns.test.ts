import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { startTestServer } from '../server/helpers.js';
import { until } from '../until.js';
import { FrameClient } from './frames.js';

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const close of closing.splice(0).reverse()) await close();
});

/**
 * A slow link: each push of deliveries fills the connection's buffer past maxStreamBufferBytes,
 * and, while `link.drains`, it drains a moment later, as the client reads it.
 */
function slowLink(drains: boolean): { drains: boolean; drainNow(): void } {
  let buffered = 0;
  const link = {
    drains,
    drainNow() {
      buffered = 0;
    },
  };
  vi.spyOn(WebSocket.prototype, 'bufferedAmount', 'get').mockImplementation(() => buffered);
  const send = WebSocket.prototype.send;
  vi.spyOn(WebSocket.prototype, 'send').mockImplementation(function (
    this: WebSocket,
    ...args: Parameters<WebSocket['send']>
  ) {
    if (String(args[0]).startsWith('{"type":"deliveries"')) {
      buffered = 1024 * 1024;
      if (link.drains) setTimeout(() => link.drainNow(), 5);
    }
    return send.apply(this, args);
  });
  return link;
}

/**
 * A server that pushes one job a push (a receive takes at most maxBatch), with `backlog` jobs
 * ready in its queue `busy`.
 */
async function serverWithBacklog(backlog: number) {
  const server = await startTestServer({
    limits: { maxBatch: 1, maxStreamBufferBytes: 64 * 1024 },
  });
  closing.push(() => server.close());
  const busy = await server.broker.queue('busy', { visibility: 60_000 });
  for (let index = 0; index < backlog; index++) await busy.publish({ id: `busy-${index}` });
  return server;
}

describe('subscriptions of one connection that each push fills', () => {
  it('R33 take turns: the one that gave its jobs back for want of room pushes while the other still has a backlog', async () => {
    slowLink(true);
    const backlog = 100;
    const server = await serverWithBacklog(backlog);
    const other = await server.broker.queue('other', { visibility: 60_000 });
    const client = await FrameClient.open(server.baseUrl);
    closing.push(() => client.close());
    const subscribed = await client.request({
      type: 'subscribe',
      id: 1,
      queue: 'busy',
      prefetch: backlog,
    });
    expect(subscribed.type).toBe('subscribed');
    await until(() => client.pushed(1).length > 0, {
      what: 'a push to subscription 1',
      timeout: 10_000,
    });
    await other.publish({ id: 'other-1' });
    client.send({ type: 'subscribe', id: 2, queue: 'other', prefetch: 10 });

    // Pushed while the busy queue still has jobs to push, not once it has none left: given
    // back, unworked, at most once (R33), not at every drain.
    await until(() => client.pushed(2).length > 0 || client.pushed(1).length === backlog, {
      what: 'a push to subscription 2, or the whole backlog to 1',
      timeout: 30_000,
    });
    expect(client.pushed(2).map((delivery) => delivery.id)).toEqual(['other-1']);
    expect(client.pushed(1).length).toBeLessThan(backlog);
    expect((await other.stats()).unworked).toBeLessThanOrEqual(1);
  });

  it('R33 one whose given back job went elsewhere gives up its turn: another is pushed while the busy one still has a backlog', async () => {
    // Drained by hand at first, then a moment after each push, as the client reads.
    const link = slowLink(false);
    const backlog = 100;
    const server = await serverWithBacklog(backlog);
    const quiet = await server.broker.queue('quiet', { visibility: 60_000 });
    const other = await server.broker.queue('other', { visibility: 60_000 });
    const client = await FrameClient.open(server.baseUrl);
    closing.push(() => client.close());
    // Waits on its empty queue while the busy one backs the connection up.
    const quietSubscribed = await client.request({
      type: 'subscribe',
      id: 2,
      queue: 'quiet',
      prefetch: 10,
    });
    expect(quietSubscribed.type).toBe('subscribed');
    const busySubscribed = await client.request({
      type: 'subscribe',
      id: 1,
      queue: 'busy',
      prefetch: backlog,
    });
    expect(busySubscribed.type).toBe('subscribed');
    await until(() => client.pushed(1).length > 0, {
      what: 'a push to subscription 1',
      timeout: 10_000,
    });
    // Its job comes while the connection is backed up: given back, it waits for its turn...
    await quiet.publish({ id: 'quiet-1' });
    await until(async () => (await quiet.stats()).unworked === 1, {
      what: 'the quiet job given back',
      timeout: 10_000,
    });
    // ...and another consumer takes that job: nothing is left for it.
    expect((await quiet.receive({ max: 1, wait: 0 })).map((delivery) => delivery.id)).toEqual([
      'quiet-1',
    ]);
    await other.publish({ id: 'other-1' });
    client.send({ type: 'subscribe', id: 3, queue: 'other', prefetch: 10 });
    link.drains = true;
    link.drainNow();

    await until(() => client.pushed(3).length > 0 || client.pushed(1).length === backlog, {
      what: 'a push to subscription 3, or the whole backlog to 1',
      timeout: 30_000,
    });
    expect(client.pushed(3).map((delivery) => delivery.id)).toEqual(['other-1']);
    expect(client.pushed(1).length).toBeLessThan(backlog);
    expect((await other.stats()).unworked).toBeLessThanOrEqual(1);
  });
});
