import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { postgresUrl, queueName } from '../conformance/engines.js';
import { postgresSkipReason } from '../crash/postgres.js';
import { call, startTestServer, type TestServer } from '../server/helpers.js';
import { FrameClient } from './frames.js';

// R16 over the stream: a session closed elsewhere releases its deliveries at once (R12), and a
// subscription in it whose credit is all in use runs no receive that would learn so. The close
// wakes the queue's receivers, here and, on PostgreSQL, on every server: that wake-up ends the
// subscription too, not its next look within a heartbeat, so that the client stops handing out
// what it holds of a session that has ended. The heartbeat here is far longer than the test,
// and the clock stands still: neither a look within a heartbeat nor a lease's end can end it.
const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});
const skip = await postgresSkipReason();

const HEARTBEAT_MS = 600_000;

async function serve(url: string, clock: ManualClock): Promise<TestServer> {
  const server = await startTestServer({ url, clock, limits: { streamHeartbeatMs: HEARTBEAT_MS } });
  closing.push(() => server.close());
  return server;
}

/** A subscription in `session` whose one credit is in use: its delivery pushed, unsettled. */
async function subscribedInSession(server: TestServer, queue: string, session: string) {
  const client = await FrameClient.open(server.baseUrl);
  closing.push(() => client.close());
  const subscribed = await client.request({
    type: 'subscribe',
    id: 1,
    queue,
    prefetch: 1,
    visibility: 60_000,
    session,
  });
  expect(subscribed).toMatchObject({ type: 'subscribed', subscription: 1 });
  await client.next(() => client.pushed(1).length === 1);
  return client;
}

async function openSession(server: TestServer, queue: string): Promise<string> {
  const opened = await call(server.baseUrl, 'POST', `/v1/queues/${queue}/sessions`, { body: {} });
  return opened.body.session;
}

describe('a subscription whose credit is in use, in a session closed elsewhere', () => {
  it('R16 ends at the close over HTTP through the same server, not at its next look', async () => {
    const server = await serve('memory:', new ManualClock(0));
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs', { body: { id: 'a' } });
    await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs', { body: { id: 'b' } });
    const session = await openSession(server, 'jobs');
    const client = await subscribedInSession(server, 'jobs', session);
    const closed = await call(server.baseUrl, 'POST', '/v1/queues/jobs/sessions/close', {
      body: { session },
    });
    expect(closed.body).toEqual({ released: 1 });
    expect(
      await client.next((frame) => frame.type === 'unsubscribed' && frame.subscription === 1),
    ).toMatchObject({ error: { code: 'SESSION_CLOSED' } });
    expect(client.pushed(1).map((delivery: { id: string }) => delivery.id)).toEqual(['a']);
    expect(await server.broker.handle('jobs').stats()).toMatchObject({
      ready: 2,
      active: 0,
      sessions: 0,
    });
  });

  it('R16 ends once another subscription of the session finds it timed out, though no wake-up tells', async () => {
    const clock = new ManualClock(0);
    const server = await serve('memory:', clock);
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs', { body: { id: 'a' } });
    const opened = await call(server.baseUrl, 'POST', '/v1/queues/jobs/sessions', {
      body: { timeout: 1000 },
    });
    const session: string = opened.body.session;
    const client = await subscribedInSession(server, 'jobs', session);
    // A second subscription of the session, with another lease: nothing is ready, it waits.
    const waiting = await client.request({
      type: 'subscribe',
      id: 2,
      queue: 'jobs',
      prefetch: 1,
      visibility: 50_000,
      session,
    });
    expect(waiting).toMatchObject({ type: 'subscribed', subscription: 2 });
    // Past the session's timeout: the waiting one looks, and its look ends the session (R3).
    clock.advance(1000);
    for (const subscription of [2, 1]) {
      expect(
        await client.next(
          (frame) => frame.type === 'unsubscribed' && frame.subscription === subscription,
        ),
      ).toMatchObject({ error: { code: 'SESSION_CLOSED' } });
    }
    expect(await server.broker.handle('jobs').stats()).toMatchObject({
      ready: 1,
      active: 0,
      sessions: 0,
    });
  });

  it.skipIf(skip !== undefined)(
    'R16 ends at the close through another server over one PostgreSQL database',
    async () => {
      // One clock for both: the queue's time stands still on either server.
      const clock = new ManualClock(0);
      const here = await serve(postgresUrl(), clock);
      const there = await serve(postgresUrl(), clock);
      const name = queueName('session-closed-elsewhere');
      const queue = await here.broker.queue(name);
      closing.push(() => here.broker.deleteQueue(name));
      await queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
      const session = await openSession(here, name);
      const client = await subscribedInSession(here, name, session);
      const closed = await call(there.baseUrl, 'POST', `/v1/queues/${name}/sessions/close`, {
        body: { session },
      });
      expect(closed.body).toEqual({ released: 1 });
      expect(
        await client.next((frame) => frame.type === 'unsubscribed' && frame.subscription === 1),
      ).toMatchObject({ error: { code: 'SESSION_CLOSED' } });
      expect(client.pushed(1).map((delivery: { id: string }) => delivery.id)).toEqual(['a']);
      expect(await queue.stats()).toMatchObject({ ready: 2, active: 0, sessions: 0 });
    },
  );
});
