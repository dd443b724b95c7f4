import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Api, ApiError } from '../../src/server/ui/web/api.js';
import { PollingFeed, type Topic, type Update } from '../../src/server/ui/web/feed.js';

/** A page that is never hidden. */
const shown = { hidden: false, addEventListener() {} };

/** An API whose every read answers what `answer` says, counting the calls by name. */
function fakeApi(answer: (name: string) => unknown) {
  const calls: string[] = [];
  const read = (name: string) => async () => {
    calls.push(name);
    const outcome = answer(name);
    if (outcome instanceof Error) throw outcome;
    return outcome;
  };
  const api = {
    me: read('me'),
    allStats: read('allStats'),
    queueStats: read('queueStats'),
    queue: read('queue'),
    inspect: read('inspect'),
    deliveries: read('deliveries'),
    deadLetters: read('deadLetters'),
    job: read('job'),
  } as unknown as Api;
  return { api, calls };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('the dashboard’s polling feed', () => {
  let feed: PollingFeed | undefined;
  afterEach(() => {
    feed?.close();
    vi.useRealTimers();
  });

  it('is current only while the server answers: a failed read neither says "live" nor moves the time', async () => {
    let down = false;
    const { api } = fakeApi(() => (down ? new TypeError('Failed to fetch') : { queueTime: 1 }));
    feed = new PollingFeed(api, 60_000, shown);
    feed.subscribe({ kind: 'queueStats', queue: 'a' }, () => {});
    await settle();
    const answered = feed.state.lastUpdate;
    expect(answered).toBeGreaterThan(0);
    expect(feed.state.failing).toBeUndefined();
    down = true;
    await new Promise((resolve) => setTimeout(resolve, 5));
    feed.refresh();
    await settle();
    expect(feed.state.lastUpdate).toBe(answered);
    expect(feed.state.failing).toBe('Failed to fetch');
    // A server failing or refusing the key is no answer either.
    const { api: failing } = fakeApi(() => new ApiError(503, 'UNAVAILABLE', 'shutting down'));
    const other = new PollingFeed(failing, 60_000, shown);
    other.subscribe({ kind: 'stats' }, () => {});
    await settle();
    expect(other.state).toMatchObject({ lastUpdate: 0, failing: 'shutting down' });
    other.close();
    down = false;
    feed.refresh();
    await settle();
    expect(feed.state.lastUpdate).toBeGreaterThan(answered);
    expect(feed.state.failing).toBeUndefined();
  });

  it('takes a refusal (403, 404) as an answer, and forgets a failing topic no longer read', async () => {
    const { api } = fakeApi((name) =>
      name === 'job' ? new ApiError(404, 'NOT_FOUND', 'no such job') : new TypeError('down'),
    );
    feed = new PollingFeed(api, 60_000, shown);
    feed.subscribe({ kind: 'job', queue: 'a', id: 'x' }, () => {});
    await settle();
    expect(feed.state.failing).toBeUndefined();
    expect(feed.state.lastUpdate).toBeGreaterThan(0);
    const stop = feed.subscribe({ kind: 'deliveries', queue: 'a' }, () => {});
    await settle();
    expect(feed.state.failing).toBe('down');
    stop();
    expect(feed.state.failing).toBeUndefined();
  });

  it('reads one queue’s figures for a queue topic, and tells onRead before the subscribers', async () => {
    const { api, calls } = fakeApi(() => ({ queueTime: 5 }));
    feed = new PollingFeed(api, 60_000, shown);
    const heard: string[] = [];
    feed.onRead((topic: Topic, update: Update<unknown>) =>
      heard.push(`read ${topic.kind} ${topic.queue} ${JSON.stringify(update.data)}`),
    );
    feed.subscribe({ kind: 'queueStats', queue: 'orders' }, () => heard.push('subscriber'));
    await settle();
    expect(calls).toEqual(['queueStats']);
    expect(heard).toEqual(['read queueStats orders {"queueTime":5}', 'subscriber']);
  });

  it('reads each page of queues as a topic of its own, asking the server for that page', async () => {
    const asked: unknown[] = [];
    const api = {
      allStats: async (page: unknown) => {
        asked.push(page);
        return { queues: [], total: 0 };
      },
    } as unknown as Api;
    feed = new PollingFeed(api, 60_000, shown);
    const heard: string[] = [];
    const first = { contains: '', offset: 0, limit: 50 };
    const second = { contains: '', offset: 50, limit: 50 };
    const filtered = { contains: 'eu', offset: 0, limit: 50 };
    for (const page of [first, second, filtered]) {
      feed.subscribe({ kind: 'stats', page }, () => heard.push(JSON.stringify(page)));
    }
    await settle();
    expect(asked).toEqual([first, second, filtered]);
    expect(heard).toEqual([first, second, filtered].map((page) => JSON.stringify(page)));
  });
});
