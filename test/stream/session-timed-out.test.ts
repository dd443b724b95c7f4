import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { postgresUrl, queueName } from '../conformance/engines.js';
import { postgresSkipReason } from '../crash/postgres.js';
import { call, startTestServer, type TestServer } from '../server/helpers.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { until } from '../until.js';
import { FrameClient } from './frames.js';

// R16 over the stream: a session that times out releases its deliveries at the step that finds
// it so (R3), whatever call that step is part of: here the timed look of a receive waiting on
// the queue, woken by the clock at the session's end. A subscription in the session whose
// credit is all in use runs no receive that would learn so. The step wakes the queue's
// receivers as a close does, here and, on PostgreSQL, on every server: that wake-up ends the
// subscription, not its next look within a heartbeat, so that the client stops handing out
// what it holds of a session that has ended. The heartbeat here is far longer than the test,
// and leases outlast it: neither a look within a heartbeat nor a lease's end can end it.
const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});
const skip = await postgresSkipReason();
const directory = temporaryDirectory('leaseq-session-timed-out-');

const HEARTBEAT_MS = 600_000;
const SESSION_TIMEOUT_MS = 1000;

async function serve(url: string, clock: ManualClock): Promise<TestServer> {
  const server = await startTestServer({ url, clock, limits: { streamHeartbeatMs: HEARTBEAT_MS } });
  closing.push(() => server.close());
  return server;
}

/**
 * A subscription in a session of `queue` that times out after SESSION_TIMEOUT_MS, whose one
 * credit is in use: its delivery of `a` pushed, unsettled.
 */
async function subscribedInSession(server: TestServer, queue: string) {
  const opened = await call(server.baseUrl, 'POST', `/v1/queues/${queue}/sessions`, {
    body: { timeout: SESSION_TIMEOUT_MS },
  });
  const client = await FrameClient.open(server.baseUrl);
  closing.push(() => client.close());
  const subscribed = await client.request({
    type: 'subscribe',
    id: 1,
    queue,
    prefetch: 1,
    visibility: 60_000,
    session: opened.body.session,
  });
  expect(subscribed).toMatchObject({ type: 'subscribed', subscription: 1 });
  await client.next(() => client.pushed(1).length === 1);
  return client;
}

/**
 * A receive in no session, waiting on `queue` of `server` for longer than the clock moves in
 * the test, once it sleeps on the clock until the queue's next event: the session's end.
 */
async function waitingReceive(server: TestServer, queue: string, clock: ManualClock) {
  const sleeping = clock.waiting;
  const answer = call(server.baseUrl, 'POST', `/v1/queues/${queue}/receive`, {
    body: { wait: 20_000, visibility: 60_000 },
  });
  await until(() => clock.waiting > sleeping, { what: 'the receive to wait on the clock' });
  return { answer };
}

/** The session's end reaches the subscription: `unsubscribed` with `SESSION_CLOSED`. */
async function expectEnded(client: FrameClient) {
  expect(
    await client.next((frame) => frame.type === 'unsubscribed' && frame.subscription === 1),
  ).toMatchObject({ error: { code: 'SESSION_CLOSED' } });
  expect(client.pushed(1).map((delivery: { id: string }) => delivery.id)).toEqual(['a']);
}

describe('a subscription whose credit is in use, in a session that times out', () => {
  for (const storage of ['memory', 'sqlite'] as const) {
    it(`R16 ends at the step that finds the session timed out (${storage})`, async () => {
      const clock = new ManualClock(0);
      const url = storage === 'memory' ? 'memory:' : `sqlite:${join(directory, 'leaseq.db')}`;
      const server = await serve(url, clock);
      await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
      await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs', { body: { id: 'a' } });
      const client = await subscribedInSession(server, 'jobs');
      const { answer } = await waitingReceive(server, 'jobs', clock);
      clock.advance(SESSION_TIMEOUT_MS);
      // The receive's look ended the session and took the job it released.
      expect((await answer).body.deliveries.map((delivery: { id: string }) => delivery.id)).toEqual(
        ['a'],
      );
      await expectEnded(client);
      expect(await server.broker.handle('jobs').stats()).toMatchObject({
        active: 1,
        sessions: 0,
        sessionReleases: 1,
      });
    });
  }

  it.skipIf(skip !== undefined)(
    'R16 ends at the step of another server over one PostgreSQL database that finds it timed out',
    async () => {
      // One clock for both: the queue's time moves on either server only when the test says.
      const clock = new ManualClock(0);
      const here = await serve(postgresUrl(), clock);
      const there = await serve(postgresUrl(), clock);
      const name = queueName('session-timed-out');
      const queue = await here.broker.queue(name);
      closing.push(() => here.broker.deleteQueue(name));
      await queue.publish({ id: 'a' });
      const client = await subscribedInSession(here, name);
      const { answer } = await waitingReceive(there, name, clock);
      clock.advance(SESSION_TIMEOUT_MS);
      expect((await answer).body.deliveries.map((delivery: { id: string }) => delivery.id)).toEqual(
        ['a'],
      );
      await expectEnded(client);
      expect(await queue.stats()).toMatchObject({ active: 1, sessions: 0, sessionReleases: 1 });
    },
  );
});
