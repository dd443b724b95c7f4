import { afterEach, describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { openRemote } from '../../src/client/index.js';
import { SessionClosedError } from '../../src/core/index.js';
import { fakeStreamServer, READY_FRAME } from './fake-stream-server.js';

// R16: operations naming an ended session fail. The client holds deliveries pushed ahead to
// each subscription of a session (one per visibility its receives ask for); once the server
// ends one of them because the session has ended (SESSION_CLOSED), the others hold deliveries
// of that ended session too, whose leases are gone: none of them is handed out.
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// biome-ignore lint/suspicious/noExplicitAny: frames are read loosely
type Frame = any;

const SESSION = 'session-1';
const ENDED = { code: 'SESSION_CLOSED', message: `session ${SESSION} has ended` };

/**
 * A server that opens one session, answers a subscribe with two deliveries of its own (the
 * first for the waiting receive, the second held), and a reserve in the session as ended.
 */
async function server() {
  const received: Frame[] = [];
  let socket: WebSocket | undefined;
  let token = 0;
  const url = await fakeStreamServer((connection) => {
    socket = connection;
    connection.send(READY_FRAME);
    connection.on('message', (data) => {
      const frame = JSON.parse(String(data));
      received.push(frame);
      const reply = (answer: unknown) => connection.send(JSON.stringify(answer));
      if (frame.type === 'batch') {
        const results = frame.operations.map((operation: Frame) => {
          if (operation.type === 'openSession') return { ok: true, value: SESSION };
          if (operation.type === 'reserve') return { ok: false, error: ENDED };
          return { ok: true, value: false };
        });
        reply({ type: 'results', id: frame.id, results });
      } else if (frame.type === 'subscribe') {
        reply({ type: 'subscribed', id: frame.id, subscription: frame.id, prefetch: 2 });
        const now = Date.now();
        const deliveries = ['first', 'second'].map((which) => {
          token += 1;
          return {
            receipt: `receipt-${token}`,
            token,
            id: `${frame.visibility}-${which}`,
            payload: null,
            deadline: now + 60_000,
            deliveryCount: 1,
            redelivered: false,
          };
        });
        reply({ type: 'deliveries', subscription: frame.id, now, deliveries });
      } else if (frame.type === 'unsubscribe') {
        reply({ type: 'unsubscribed', id: frame.id, subscription: frame.subscription });
      } else if (frame.type === 'credit') {
        reply({ type: 'subscribed', id: frame.id, subscription: frame.subscription, prefetch: 2 });
      }
    });
  }, cleanups);
  return {
    url,
    received,
    send: (frame: unknown) => socket?.send(JSON.stringify(frame)),
  };
}

describe('deliveries held for a session the server ended', () => {
  it('R16 are not handed out by another subscription of the session once one is ended with SESSION_CLOSED', async () => {
    const fake = await server();
    // Held deliveries wait for a receive far longer than the test: only the end can drop them.
    const client = await openRemote(fake.url, { transport: 'stream', prefetchIdleMs: 600_000 });
    cleanups.push(() => client.close());
    const queue = client.handle('jobs');
    const session = await queue.openSession();
    expect(session).toBe(SESSION);
    const consumer = new AbortController();
    cleanups.push(() => consumer.abort());
    const subscriptions: number[] = [];
    for (const visibility of [1000, 2000]) {
      const [first] = await queue.receive({
        session,
        visibility,
        wait: 60_000,
        signal: consumer.signal,
      });
      expect(first?.id).toBe(`${visibility}-first`);
      const subscribe = fake.received.findLast((frame) => frame.type === 'subscribe');
      subscriptions.push(subscribe.id);
    }
    // The server ends the first subscription: its session has ended.
    fake.send({ type: 'unsubscribed', subscription: subscriptions[0], error: ENDED });
    // What that subscription held goes back (a nack the server answers stale).
    await expect
      .poll(() =>
        fake.received.some(
          (frame) =>
            frame.type === 'batch' &&
            frame.operations.some((operation: Frame) => operation.receipt === 'receipt-2'),
        ),
      )
      .toBe(true);
    // The second subscription's held delivery is of the same ended session: not handed out.
    await expect(queue.receive({ session, visibility: 2000 })).rejects.toBeInstanceOf(
      SessionClosedError,
    );
  });
});
