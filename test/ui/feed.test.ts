import { afterEach, describe, expect, it, vi } from 'vitest';
import { Api, ApiError, NoAnswerError } from '../../src/server/ui/web/api.js';
import {
  PollingFeed,
  SLOW_INTERVALS,
  type Topic,
  type Update,
} from '../../src/server/ui/web/feed.js';

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

  it('says a topic is not updating once its read has gone unanswered for two intervals', async () => {
    vi.useFakeTimers();
    // A stopped server (SIGSTOP) takes the request and never answers it.
    let frozen = false;
    const calls: string[] = [];
    const api = {
      queueStats: async () => {
        calls.push('queueStats');
        return frozen ? new Promise(() => {}) : { queueTime: 1 };
      },
    } as unknown as Api;
    feed = new PollingFeed(api, 1000, shown);
    feed.subscribe({ kind: 'queueStats', queue: 'a' }, () => {});
    await vi.advanceTimersByTimeAsync(0);
    const answered = feed.state.lastUpdate;
    expect(answered).toBeGreaterThan(0);
    frozen = true;
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toHaveLength(2);
    // One interval on its way: not yet.
    await vi.advanceTimersByTimeAsync(1000);
    expect(feed.state.failing).toBeUndefined();
    await vi.advanceTimersByTimeAsync((SLOW_INTERVALS - 1) * 1000);
    expect(feed.state.failing).toBe('the server has not answered for 2 s');
    await vi.advanceTimersByTimeAsync(3000);
    expect(feed.state.failing).toBe('the server has not answered for 5 s');
    expect(feed.state.lastUpdate).toBe(answered);
    // No second read while one is on its way.
    expect(calls).toHaveLength(2);
  });

  it('does not draw an answer to a read that started before a refresh, and reads again at once', async () => {
    const answers: ((value: unknown) => void)[] = [];
    let calls = 0;
    const api = {
      deadLetters: () => {
        calls += 1;
        return new Promise((resolve) => answers.push(resolve));
      },
    } as unknown as Api;
    feed = new PollingFeed(api, 60_000, shown);
    const drawn: unknown[] = [];
    feed.subscribe({ kind: 'deadLetters', queue: 'a' }, (update) => drawn.push(update.data));
    expect(calls).toBe(1);
    // An action ends while that read is on its way: what it answers is the state before.
    feed.refresh();
    expect(calls).toBe(1);
    answers[0]?.({ deadLetters: ['before'] });
    await settle();
    expect(drawn).toEqual([]);
    expect(calls).toBe(2);
    answers[1]?.({ deadLetters: [] });
    await settle();
    expect(drawn).toEqual([{ deadLetters: [] }]);
    expect(feed.state.failing).toBeUndefined();
  });

  it('drops what it read of a thing that is gone (404) or refused (403), and keeps it on a failure', async () => {
    let answer: unknown = { id: 'd1', state: 'dead' };
    const { api } = fakeApi(() => answer);
    feed = new PollingFeed(api, 60_000, shown);
    const updates: Update<unknown>[] = [];
    feed.subscribe({ kind: 'job', queue: 'a', id: 'd1' }, (update) => updates.push(update));
    await settle();
    const read = async (next: unknown) => {
      answer = next;
      feed?.refresh();
      await settle();
      return updates.at(-1);
    };
    // No answer: the last state stays, said to be old.
    expect(await read(new TypeError('Failed to fetch'))).toMatchObject({ data: { id: 'd1' } });
    expect(await read(new ApiError(503, 'UNAVAILABLE', 'busy'))).toMatchObject({
      data: { id: 'd1' },
    });
    const gone = await read(new ApiError(404, 'NOT_FOUND', 'job d1 is not in queue a'));
    expect(gone?.data).toBeUndefined();
    expect(gone?.error?.message).toBe('job d1 is not in queue a');
    await read({ id: 'd1', state: 'dead' });
    expect((await read(new ApiError(403, 'FORBIDDEN', 'no')))?.data).toBeUndefined();
  });
});

describe('the dashboard’s API calls', () => {
  const realFetch = globalThis.fetch;
  afterEach(() => {
    globalThis.fetch = realFetch;
  });

  it('give up a read the server does not answer, in words an operator reads', async () => {
    // A server that takes the request and never answers: only the call's own signal ends it.
    globalThis.fetch = ((_url: string, init: RequestInit) =>
      new Promise((_resolve, reject) => {
        init.signal?.addEventListener('abort', () => reject(init.signal?.reason));
      })) as typeof fetch;
    const api = new Api(() => undefined, { readMs: 50, actionMs: 80 });
    const read = await api.me().catch((error: unknown) => error);
    expect(read).toBeInstanceOf(NoAnswerError);
    expect(read).toMatchObject({
      code: 'TIMEOUT',
      message: 'the server has not answered within 0.05 s',
    });
    const action = await api.purge('a', ['x']).catch((error: unknown) => error);
    expect(action).toMatchObject({ code: 'TIMEOUT' });
    // A browser says "Failed to fetch" when nothing answers at all.
    globalThis.fetch = (async () => {
      throw new TypeError('Failed to fetch');
    }) as typeof fetch;
    const down = await api.me().catch((error: unknown) => error);
    expect(down).toBeInstanceOf(NoAnswerError);
    expect(down).toMatchObject({ code: 'UNREACHABLE' });
    expect((down as Error).message).not.toContain('Failed to fetch');
    expect((down as Error).message).toMatch(/^the server could not be reached/);
  });

  it('say that an action given up may still have been done, and not of the maxBatch read first', async () => {
    // The server stopped: nothing it is asked is answered.
    globalThis.fetch = ((_url: string, init: RequestInit) =>
      new Promise((_resolve, reject) => {
        init.signal?.addEventListener('abort', () => reject(init.signal?.reason));
      })) as typeof fetch;
    const api = new Api(() => undefined, { readMs: 50, actionMs: 80 });
    // Selected ids are sent no more than maxBatch at a time: the limits are read first, and
    // given up so, the redrive was never sent.
    const limits = await api.maxBatch().catch((error: unknown) => error);
    expect(limits).toMatchObject({
      code: 'TIMEOUT',
      message: 'the server has not answered within 0.05 s',
    });
    const redrive = await api.redrive('a', ['x']).catch((error: unknown) => error);
    expect(redrive).toMatchObject({
      code: 'TIMEOUT',
      message:
        'the server has not answered within 0.08 s; it may still have been done, as the page shows once read again',
    });
  });

  it('ask the dead letters without their payloads', async () => {
    const asked: string[] = [];
    globalThis.fetch = (async (url: string) => {
      // As the page at /ui/ asks it.
      const asking = new URL(url, 'http://127.0.0.1:7700/ui/');
      asked.push(`${asking.pathname}${asking.search}`);
      return new Response(JSON.stringify({ deadLetters: [] }), { status: 200 });
    }) as typeof fetch;
    await new Api(() => undefined).deadLetters('orders');
    // The figures first: a step of the queue, which a page read takes none of (R34).
    expect(asked).toEqual([
      '/v1/queues/orders/stats',
      '/v1/queues/orders/dead-letters?limit=1000&payload=false',
    ]);
  });
});
