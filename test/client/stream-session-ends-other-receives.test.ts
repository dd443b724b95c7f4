import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { openRemote, type RemoteBroker } from '../../src/client/index.js';
import type { Queue } from '../../src/index.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

let server: TestServer;
let client: RemoteBroker;

beforeEach(async () => {
  server = await startTestServer({ clock: new ManualClock(0) });
  client = await openRemote(server.baseUrl, { transport: 'stream' });
});

afterEach(async () => {
  await client.close();
  await server.close();
});

/**
 * The ends of a session this client does not receive outside of: each must leave the
 * deliveries in hand of the receives outside the session counted, as the server counts them.
 */
const sessionEnds: [string, (queue: Queue, session: string, token: number) => Promise<number>][] = [
  ['ackUpTo', (queue, session, token) => queue.ackUpTo(session, token)],
  ['nackUpTo', (queue, session, token) => queue.nackUpTo(session, token)],
  ['closeSession', (queue, session) => queue.closeSession(session)],
];

describe('over the stream, the end of one session leaves the other receives of its queue alone', () => {
  it.each(sessionEnds)(
    'R11 R16 after %s of another session, a receive that waits next to three in hand is pushed a ready job',
    async (_name, end) => {
      const queue = await client.queue('loops', { visibility: 60_000 });
      await queue.publishBatch(['s', 'a', 'b', 'c', 'd', 'e'].map((id) => ({ id })));
      const session = await queue.openSession();
      const [inSession] = await queue.receive({ session });
      expect(inSession?.id).toBe('s');
      // Three loops that each receive one, as a worker of several loops does: prefetch three.
      const held: string[] = [];
      for (let i = 0; i < 3; i++) {
        const [delivery] = await queue.receive({ wait: 60_000 });
        held.push(delivery?.id as string);
      }
      expect(held).toEqual(['a', 'b', 'c']);
      expect(await end(queue, session, inSession?.token as number)).toBe(1);
      // A fourth loop waits: the three in hand still count, so its wait raises the prefetch.
      const next = await queue.receive({ wait: 60_000 });
      expect(next).toHaveLength(1);
      expect((await server.broker.queue('loops').then((q) => q.stats())).active).toBe(4);
    },
  );
});
