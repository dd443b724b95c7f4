import { afterEach, describe, expect, it, vi } from 'vitest';
import { Prefetch } from '../../src/client/prefetch.js';
import type { StreamLink } from '../../src/client/stream-link.js';
import type { ServerFrame, WireDelivery } from '../../src/wire/index.js';

/** A link that answers every request at once and records it; pushes come from the test. */
function fakeLink() {
  const requests: { type: string; prefetch?: number }[] = [];
  const link = {
    knownLimits: async () => ({ maxPrefetch: 100 }),
    connected: true,
    forget: () => {},
    async request(frame: { type: string; prefetch?: number }): Promise<ServerFrame> {
      requests.push({ type: frame.type, prefetch: frame.prefetch });
      if (frame.type === 'unsubscribe') return { type: 'unsubscribed', id: 1, subscription: 1 };
      return { type: 'subscribed', id: 1, subscription: 1, prefetch: frame.prefetch ?? 1 };
    },
  };
  return { link: link as unknown as StreamLink, requests };
}

function delivery(id: string, token: number, deadline: number): WireDelivery {
  const receipt = `receipt-${id}`;
  return { receipt, token, id, payload: null, deadline, deliveryCount: 1, redelivered: false };
}

/** A subscription's client side on `link`; what it gives back is added to `released`. */
function prefetchOn(link: StreamLink, idleMs = 60_000, released: string[][] = []): Prefetch {
  return new Prefetch(link, {
    queue: 'jobs',
    visibility: undefined,
    session: undefined,
    idleMs,
    release: async (_queue, receipts) => {
      released.push(receipts);
    },
  });
}

/**
 * A receive of one that gets `a`, pushed with a 150 ms lease by a server whose clock is
 * `serverAhead` ms ahead of this one; the server's time of the push.
 */
async function receiveOne(prefetch: Prefetch, serverAhead: number): Promise<number> {
  const first = prefetch.take(1, 5000, undefined);
  await vi.advanceTimersByTimeAsync(0);
  const serverNow = Date.now() + serverAhead;
  prefetch.push({
    type: 'deliveries',
    subscription: 1,
    now: serverNow,
    deliveries: [delivery('a', 1, serverNow + 150)],
  });
  expect((await first).map((each) => each.id)).toEqual(['a']);
  return serverNow;
}

/** The server pushes `ids` now (its clock is this one), each leased for `leaseMs`. */
function pushNow(prefetch: Prefetch, leaseMs: number, ids: readonly string[]): void {
  const now = Date.now();
  prefetch.push({
    type: 'deliveries',
    subscription: 1,
    now,
    deliveries: ids.map((id, index) => delivery(id, index + 1, now + leaseMs)),
  });
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the client side of a subscription', () => {
  it('counts a delivery it handed out as in hand until its lease ends, then no more', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { link, requests } = fakeLink();
    const prefetch = prefetchOn(link);
    // The server's clock is 10 s ahead of this one: its deadlines are read by its clock.
    await receiveOne(prefetch, 10_000);
    // A consumer that goes on (a worker's signal): its subscription outlives a wait that ran out.
    const consumer = new AbortController();
    // While its lease lasts, a second waiting receive needs room beside it: the prefetch rises.
    const second = prefetch.take(1, 5000, consumer.signal);
    await vi.advanceTimersByTimeAsync(0);
    expect(requests.filter((each) => each.type === 'credit')).toEqual([
      { type: 'credit', prefetch: 2 },
    ]);
    await vi.advanceTimersByTimeAsync(5000);
    expect(await second).toEqual([]);
    // `a` was never settled here and its lease has ended on the server, which no longer counts
    // it: a waiting receive now needs no more than its own room.
    const third = prefetch.take(3, 5000, consumer.signal);
    await vi.advanceTimersByTimeAsync(0);
    expect(requests.filter((each) => each.type === 'credit')).toEqual([
      { type: 'credit', prefetch: 2 },
      { type: 'credit', prefetch: 3 },
    ]);
    await vi.advanceTimersByTimeAsync(5000);
    expect(await third).toEqual([]);
  });

  it('moves a delivery in hand to its new deadline when it is extended through this client', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { link, requests } = fakeLink();
    const prefetch = prefetchOn(link);
    const serverNow = await receiveOne(prefetch, 0);
    prefetch.extended([{ receipt: 'receipt-a', deadline: serverNow + 60_000 }]);
    await vi.advanceTimersByTimeAsync(1000);
    // Past its first deadline, still leased: it still takes a place in the prefetch.
    const second = prefetch.take(1, 5000, undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(requests.filter((each) => each.type === 'credit')).toEqual([
      { type: 'credit', prefetch: 2 },
    ]);
    await vi.advanceTimersByTimeAsync(5000);
    await second;
  });
});

describe('a subscription the server ends as it opens', () => {
  it('fails the receive with the reason, and the next receive subscribes again', async () => {
    const requests: string[] = [];
    const link = {
      knownLimits: async () => ({ maxPrefetch: 100 }),
      connected: true,
      forget: () => {},
      request(
        frame: { type: string },
        listener?: { push(frame: unknown): void },
      ): Promise<ServerFrame> {
        requests.push(frame.type);
        const subscription = requests.length;
        return new Promise((resolve) => {
          resolve({ type: 'subscribed', id: subscription, subscription, prefetch: 1 });
          // Read in the same turn as the answer, before the subscribe has taken it in.
          listener?.push({
            type: 'unsubscribed',
            subscription,
            error: { code: 'STORAGE_UNAVAILABLE', message: 'the storage is unavailable' },
          });
        });
      },
    } as unknown as StreamLink;
    const prefetch = prefetchOn(link);
    await expect(prefetch.take(1, 100, undefined)).rejects.toMatchObject({
      code: 'STORAGE_UNAVAILABLE',
    });
    await expect(prefetch.take(1, 100, undefined)).rejects.toMatchObject({
      code: 'STORAGE_UNAVAILABLE',
    });
    expect(requests).toEqual(['subscribe', 'subscribe']);
  });
});

describe('held deliveries', () => {
  it('go back at a purge through this client, not handed out: one may be of a job published after it', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { link } = fakeLink();
    const released: string[][] = [];
    const prefetch = prefetchOn(link, 60_000, released);
    await receiveOne(prefetch, 0);
    pushNow(prefetch, 30_000, ['x', 'y']);
    prefetch.purged();
    expect(released).toEqual([['receipt-x', 'receipt-y']]);
    expect(prefetch.takeHeld(5)).toEqual([]);
    pushNow(prefetch, 30_000, ['z']);
    prefetch.cancelled(new Set(['z']));
    expect(released).toEqual([['receipt-x', 'receipt-y'], ['receipt-z']]);
    expect(prefetch.takeHeld(5)).toEqual([]);
  });

  it('go back only when one of them is itself due, not at a time set for ones taken since (R13)', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { link } = fakeLink();
    const released: string[][] = [];
    const prefetch = prefetchOn(link, 60_000, released);
    const pushAt = (...ids: string[]) => pushNow(prefetch, 800, ids);
    const opened = prefetch.take(1, 1000, undefined);
    await vi.advanceTimersByTimeAsync(0);
    pushAt('a', 'b', 'c');
    expect((await opened).map((each) => each.id)).toEqual(['a']);
    // `b` and `c` are held, to go back 50 ms before their leases end (750 ms from now).
    await vi.advanceTimersByTimeAsync(10);
    expect(prefetch.takeHeld(1).map((each) => each.id)).toEqual(['b']);
    await vi.advanceTimersByTimeAsync(690);
    pushAt('d');
    await vi.advanceTimersByTimeAsync(40);
    expect(prefetch.takeHeld(1).map((each) => each.id)).toEqual(['c']);
    // 750 ms: what `b` and `c` were due at. `d` was pushed 50 ms ago and is not due.
    await vi.advanceTimersByTimeAsync(100);
    expect(released).toEqual([]);
    // Nobody takes `d`: it goes back before its own lease ends.
    await vi.advanceTimersByTimeAsync(700);
    expect(released).toEqual([['receipt-d']]);
  });
});

describe('a prefetch raised by acks on their way', () => {
  it('falls to the deliveries in hand once a held one waits 100 ms untaken, and rises again on demand', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { link, requests } = fakeLink();
    const prefetch = prefetchOn(link);
    const push = (...ids: string[]) => pushNow(prefetch, 60_000, ids);
    const taken = async (receive: Promise<WireDelivery[]>) => (await receive).map((d) => d.id);
    const credits = () => requests.filter((request) => request.type === 'credit');
    // Three receives of two, each waiting while the ones before are in hand: prefetch 6.
    const first = prefetch.take(2, 5000, undefined);
    await vi.advanceTimersByTimeAsync(0);
    push('a', 'b');
    expect(await taken(first)).toEqual(['a', 'b']);
    for (const ids of [
      ['c', 'd'],
      ['e', 'f'],
    ]) {
      const next = prefetch.take(2, 5000, undefined);
      await vi.advanceTimersByTimeAsync(0);
      push(...ids);
      expect(await taken(next)).toEqual(ids);
    }
    expect(credits().map((credit) => credit.prefetch)).toEqual([4, 6]);
    // Four are acked; the server fills the credit again while the consumer slowed down.
    prefetch.settled(['a', 'b', 'c', 'd'].map((id) => `receipt-${id}`));
    push('g', 'h', 'i', 'j');
    await vi.advanceTimersByTimeAsync(50);
    expect(prefetch.takeHeld(1).map((d) => d.id)).toEqual(['g']);
    // `h` has waited 50 ms: no sign of hoarding yet.
    expect(credits()).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(60);
    expect(prefetch.takeHeld(1).map((d) => d.id)).toEqual(['h']);
    // `i` has waited 110 ms: the prefetch falls to the four in hand (e, f, g, h).
    expect(credits().map((credit) => credit.prefetch)).toEqual([4, 6, 4]);
    // Not again while it stands there.
    expect(prefetch.takeHeld(1).map((d) => d.id)).toEqual(['i']);
    expect(credits()).toHaveLength(3);
    // Nothing held and a receive waits: the demand raises it again (six in hand, one asked).
    expect(prefetch.takeHeld(1).map((d) => d.id)).toEqual(['j']);
    const waiting = prefetch.take(1, 5000, undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(credits().map((credit) => credit.prefetch)).toEqual([4, 6, 4, 7]);
    push('k');
    expect(await taken(waiting)).toEqual(['k']);
  });

  it('falls to the deliveries in hand when a receive takes the last held one after it waited 100 ms', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { link, requests } = fakeLink();
    const prefetch = prefetchOn(link);
    const push = (...ids: string[]) => pushNow(prefetch, 60_000, ids);
    const credits = () => requests.filter((request) => request.type === 'credit');
    // One receive at a time (concurrency 1); the second waits while `a` is still in hand.
    const first = prefetch.take(1, 5000, undefined);
    await vi.advanceTimersByTimeAsync(0);
    push('a');
    await first;
    const second = prefetch.take(1, 5000, undefined);
    await vi.advanceTimersByTimeAsync(0);
    push('b');
    await second;
    expect(credits().map((credit) => credit.prefetch)).toEqual([2]);
    // `a` is acked and the server pushes `c`, which waits while `b` is worked on.
    prefetch.settled(['receipt-a']);
    push('c');
    await vi.advanceTimersByTimeAsync(150);
    prefetch.settled(['receipt-b']);
    // Taking `c` leaves nothing held, but `c` waited 150 ms: the prefetch falls to one.
    expect(prefetch.takeHeld(1).map((d) => d.id)).toEqual(['c']);
    expect(credits().map((credit) => credit.prefetch)).toEqual([2, 1]);
  });

  it('never falls below the largest max a receive asked for', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { link, requests } = fakeLink();
    const prefetch = prefetchOn(link);
    const push = (...ids: string[]) => pushNow(prefetch, 60_000, ids);
    const first = prefetch.take(3, 5000, undefined);
    await vi.advanceTimersByTimeAsync(0);
    push('a', 'b', 'c');
    const three = await first;
    const more = prefetch.take(3, 5000, undefined);
    await vi.advanceTimersByTimeAsync(0);
    push('d', 'e', 'f');
    prefetch.settled([...three, ...(await more)].map((d) => d.receipt));
    // All six settled; six more pushed, and taken slowly, one at a time.
    push('g', 'h', 'i', 'j', 'k', 'l');
    await vi.advanceTimersByTimeAsync(150);
    expect(prefetch.takeHeld(1).map((d) => d.id)).toEqual(['g']);
    // One in hand, but receives asked for three at once: the prefetch stays at three.
    const credits = requests.filter((request) => request.type === 'credit');
    expect(credits.map((credit) => credit.prefetch)).toEqual([6, 3]);
  });
});

describe('a subscription opened again', () => {
  it('starts from what is asked for then, not the prefetch it had before it gave back (R13)', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { link, requests } = fakeLink();
    const released: string[][] = [];
    const prefetch = prefetchOn(link, 1000, released);
    const push = (...ids: string[]) => pushNow(prefetch, 60_000, ids);
    // Five at once, then settled; five more pushed that nobody takes go back after idleMs.
    const five = prefetch.take(5, 5000, undefined);
    await vi.advanceTimersByTimeAsync(0);
    push('a', 'b', 'c', 'd', 'e');
    prefetch.settled((await five).map((each) => each.receipt));
    push('f', 'g', 'h', 'i', 'j');
    await vi.advanceTimersByTimeAsync(1000);
    expect(released).toEqual([['receipt-f', 'receipt-g', 'receipt-h', 'receipt-i', 'receipt-j']]);
    // The consumer now takes one at a time: five would be pushed for one taken, again and again.
    const one = prefetch.take(1, 100, undefined);
    await vi.advanceTimersByTimeAsync(100);
    await one;
    expect(requests.filter((each) => each.type === 'subscribe')).toEqual([
      { type: 'subscribe', prefetch: 5 },
      { type: 'subscribe', prefetch: 1 },
    ]);
  });
});
