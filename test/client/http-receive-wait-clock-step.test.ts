import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import type { RemoteBroker } from '../../src/client/index.js';
import { open } from '../../src/index.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

// Over plain HTTP a waiting receive polls until its wait is over: against a server that holds
// no receive (maxWaitMs 0) it polls, and pauses about 100 ms between two polls. The wait was
// measured on the wall clock: stepped back an hour during a pause, the receive went on polling
// for an hour more than it was asked to wait; stepped either way during a poll, it ended at once.

const HOUR = 3_600_000;
/** Polls far beyond what a wait of 300 ms takes, one every 100 ms: the receive is cut there. */
const POLLS_CUT = 50;

let server: TestServer | undefined;
let client: RemoteBroker | undefined;

afterEach(async () => {
  vi.restoreAllMocks();
  await client?.close();
  await server?.close();
});

/** A wall clock `step` ms away from the real one once `stepped.now` is true. */
function steppedWall(step: number) {
  const wall = Date.now.bind(Date);
  const stepped = { now: false };
  vi.spyOn(Date, 'now').mockImplementation(() => wall() + (stepped.now ? step : 0));
  return stepped;
}

/** Opens a client over plain HTTP whose receive requests are counted, and cut after POLLS_CUT. */
async function countingClient(afterPoll: () => void) {
  server = await startTestServer({ clock: new ManualClock(0), limits: { maxWaitMs: 0 } });
  const cut = new AbortController();
  const counted = { polls: 0 };
  const send: typeof fetch = async (input, init) => {
    const answer = await fetch(input, init);
    if (String(input).endsWith('/receive')) {
      counted.polls += 1;
      if (counted.polls >= POLLS_CUT) cut.abort();
      afterPoll();
    }
    return answer;
  };
  client = (await open(server.baseUrl, { transport: 'http', fetch: send })) as RemoteBroker;
  return { queue: await client.queue('nothing-ready'), cut, counted };
}

describe('a waiting receive over plain HTTP', () => {
  it('ends when its wait is over, though the wall clock stepped back an hour between two polls', async () => {
    const stepped = steppedWall(-HOUR);
    const { queue, cut, counted } = await countingClient(() => {});
    // The pause between two polls is the receive's only timer of at most 100 ms: the step comes
    // as it is set, after the first poll was answered and looked at.
    const setTimer = globalThis.setTimeout;
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((
      handler: () => void,
      ms?: number,
      ...rest: unknown[]
    ) => {
      if (counted.polls > 0 && ms !== undefined && ms > 0 && ms <= 100) {
        if (new Error().stack?.includes('http-channel') === true) stepped.now = true;
      }
      return setTimer(handler, ms, ...rest);
    }) as typeof setTimeout);
    const received = await queue.receive({ wait: 300, signal: cut.signal });
    expect(received).toEqual([]);
    expect(stepped.now).toBe(true);
    expect(cut.signal.aborted).toBe(false);
  });

  for (const [way, step] of [
    ['back', -HOUR],
    ['forward', HOUR],
  ] as const) {
    it(`polls on until its wait is over, though the wall clock stepped ${way} an hour during a poll`, async () => {
      const stepped = steppedWall(step);
      const { queue, cut, counted } = await countingClient(() => {
        stepped.now = true;
      });
      const received = await queue.receive({ wait: 300, signal: cut.signal });
      expect(received).toEqual([]);
      expect(cut.signal.aborted).toBe(false);
      // The first poll was answered at once (the server holds none): a wait of 300 ms polls again.
      expect(counted.polls).toBeGreaterThan(1);
    });
  }
});
