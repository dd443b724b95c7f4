import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { openRemote, type RemoteBroker, UnknownDeliveryError } from '../../src/client/index.js';
import { SessionClosedError } from '../../src/core/index.js';
import type { Queue } from '../../src/index.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

let server: TestServer;
let clock: ManualClock;
let client: RemoteBroker | undefined;

beforeEach(async () => {
  clock = new ManualClock(0);
  server = await startTestServer({ clock });
});

afterEach(async () => {
  await client?.close();
  client = undefined;
  await server.close();
});

/**
 * A job in hand outside any session, then rounds of three jobs received in a session and ended
 * there by `end`, through a receipt book of four: the job in hand must keep its receipt.
 */
async function longJobThroughSessionRounds(
  transport: 'stream' | 'http',
  end: (queue: Queue, session: string, last: number) => Promise<void>,
): Promise<Queue> {
  client = await openRemote(server.baseUrl, { transport, maxReceipts: 4 });
  const queue = await client.queue('book', { visibility: 60_000 });
  await queue.publish({ id: 'long' });
  const [long] = await queue.receive();
  expect(long?.id).toBe('long');
  for (let round = 0; round < 3; round++) {
    await queue.publishBatch([0, 1, 2].map((i) => ({ id: `r${round}-${i}` })));
    const session = await queue.openSession();
    const taken = await queue.receive({ session, max: 3 });
    expect(taken).toHaveLength(3);
    await end(queue, session, (taken[2]?.token as number) ?? 0);
  }
  // Nine others came and went through a book of four: the job in hand keeps its receipt.
  const token = long?.token as number;
  expect(await queue.extend(token, 1000)).toBe(1000);
  expect(await queue.ack(token)).toBe(true);
  return queue;
}

describe.each(['stream', 'http'] as const)(
  'over %s, deliveries ended by a session operation leave a full receipt book first',
  (transport) => {
    it('R11 ackUpTo', async () => {
      await longJobThroughSessionRounds(transport, async (queue, session, last) => {
        expect(await queue.ackUpTo(session, last)).toBe(3);
      });
    });

    it('R11 nackUpTo', async () => {
      const queue = await longJobThroughSessionRounds(transport, async (queue, session, last) => {
        expect(await queue.nackUpTo(session, last, { requeue: false })).toBe(3);
      });
      expect((await queue.stats()).dead).toBe(9);
    });

    it('R16 closeSession', async () => {
      await longJobThroughSessionRounds(transport, async (queue, session) => {
        expect(await queue.closeSession(session)).toBe(3);
      });
    });

    it('R16 a session found ended by its heartbeat', async () => {
      await longJobThroughSessionRounds(transport, async (queue, session) => {
        const closer = await server.broker.queue('book');
        await closer.closeSession(
          (await closer.inspect()).active.find((d) => d.session !== undefined)?.session as string,
        );
        await expect(queue.heartbeat(session)).rejects.toBeInstanceOf(SessionClosedError);
      });
    });

    it('R11 ackUpTo settles the session deliveries up to its token, not those above it', async () => {
      client = await openRemote(server.baseUrl, { transport, maxReceipts: 3 });
      const queue = await client.queue('above', { visibility: 60_000 });
      await queue.publishBatch(['long', 'a', 'b', 'c'].map((id) => ({ id })));
      const [long] = await queue.receive();
      const session = await queue.openSession();
      const [a, b] = await queue.receive({ session, max: 2 });
      expect(await queue.ackUpTo(session, a?.token as number)).toBe(1);
      const [c] = await queue.receive();
      // The book of three let the receipt of `a` go, the one settled; the others keep theirs.
      await expect(queue.ack(a?.token as number)).rejects.toBeInstanceOf(UnknownDeliveryError);
      for (const held of [long, b, c]) expect(await queue.ack(held?.token as number)).toBe(true);
    });
  },
);
