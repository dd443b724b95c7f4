import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { openRemote, type RemoteBroker } from '../../src/client/index.js';
import { StreamChannel } from '../../src/client/stream-channel.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

// R22 over the stream: a receive at most once that waits tries a reserve again every 100 ms
// until its wait is over. The wait was measured on the wall clock: stepped back an hour during
// it, the receive went on trying for an hour more than it was asked to wait.

const HOUR = 3_600_000;
/** Tries far beyond what a wait of 300 ms takes, one every 100 ms: the receive is cut there. */
const TRIES_CUT = 50;

let server: TestServer | undefined;
let client: RemoteBroker | undefined;

afterEach(async () => {
  vi.restoreAllMocks();
  await client?.close();
  await server?.close();
});

describe('a waiting receive at most once over the stream', () => {
  it('R22 ends when its wait is over, though the wall clock stepped back an hour during it', async () => {
    server = await startTestServer({ clock: new ManualClock(0) });
    client = await openRemote(server.baseUrl, { transport: 'stream' });
    const queue = await client.queue('nothing-ready');
    const wall = Date.now.bind(Date);
    let stepped = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => wall() - stepped);
    const cut = new AbortController();
    let tries = 0;
    const execute = StreamChannel.prototype.execute;
    vi.spyOn(StreamChannel.prototype, 'execute').mockImplementation(async function (
      this: StreamChannel,
      ...args
    ) {
      const answer = await execute.apply(this, args);
      // The step comes after the receive began: with its first reserve's answer.
      stepped = HOUR;
      tries += 1;
      if (tries >= TRIES_CUT) cut.abort();
      return answer;
    });
    const received = await queue.receive({ ack: 'auto', wait: 300, signal: cut.signal });
    expect(received).toEqual([]);
    expect(cut.signal.aborted).toBe(false);
    expect(tries).toBeGreaterThan(0);
  });
});
