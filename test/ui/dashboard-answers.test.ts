import { afterEach, describe, expect, it } from 'vitest';
import { Api, ApiError, NoAnswerError } from '../../src/server/ui/web/api.js';
import { PollingFeed } from '../../src/server/ui/web/feed.js';

/**
 * What the dashboard takes for an answer of the server. In front of it there may be a proxy,
 * which answers some requests itself: a page of its own with 200 (its sign-in page, reached by
 * a redirect once its session has run out), or a refusal to be tried again later (429, 408).
 * Neither says anything of the queues: the page must not draw it as figures, nor say "Live".
 */

/** A page that is never hidden. */
const shown = { hidden: false, addEventListener() {} };

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

/** What a browser's fetch resolves to once it followed a proxy's redirect to its sign-in page. */
function signInPage(): Response {
  return {
    ok: true,
    status: 200,
    statusText: 'OK',
    redirected: true,
    url: 'https://sso.example/login?rd=%2Fv1%2Fme',
    headers: new Headers({ 'content-type': 'text/html; charset=utf-8' }),
    json: async () => {
      throw new SyntaxError('Unexpected token < in JSON at position 0');
    },
  } as unknown as Response;
}

describe('the dashboard and a proxy that answers in the server’s stead', () => {
  const realFetch = globalThis.fetch;
  let feed: PollingFeed | undefined;
  afterEach(() => {
    globalThis.fetch = realFetch;
    feed?.close();
    feed = undefined;
  });

  it('takes a success without the API JSON as no answer, saying what answered, for reads and actions', async () => {
    globalThis.fetch = (async () => signInPage()) as typeof fetch;
    const api = new Api(() => 'a-key-of-sixteen-chars');
    // Signing in reads the key's rights first: a page that is not them is no rights at all.
    const me = await api.me().catch((error: unknown) => error);
    expect(me).toBeInstanceOf(NoAnswerError);
    expect(me).toMatchObject({ code: 'NOT_THE_API' });
    expect((me as Error).message).toContain('200, text/html');
    expect((me as Error).message).toContain('redirected to https://sso.example/login');
    const purge = await api.purge('orders', ['a']).catch((error: unknown) => error);
    expect(purge).toBeInstanceOf(NoAnswerError);
    expect((purge as Error).message).not.toContain('Cannot read properties');
    // An empty success is none of the API's answers either.
    globalThis.fetch = (async () => new Response('', { status: 200 })) as typeof fetch;
    await expect(api.deleteQueue('orders')).rejects.toMatchObject({ code: 'NOT_THE_API' });
    // The API's own answers, success or not, are read as before.
    globalThis.fetch = (async () =>
      new Response(JSON.stringify({ error: { code: 'FORBIDDEN', message: 'no' } }), {
        status: 403,
      })) as typeof fetch;
    await expect(api.me()).rejects.toBeInstanceOf(ApiError);
    globalThis.fetch = (async () =>
      new Response(JSON.stringify({ deleted: false }), { status: 200 })) as typeof fetch;
    await expect(api.deleteQueue('orders')).resolves.toBe(false);
  });

  it('says not updating while a proxy answers its sign-in page, and keeps the figures read before', async () => {
    let proxied = false;
    globalThis.fetch = (async () =>
      proxied
        ? signInPage()
        : new Response(JSON.stringify({ queueTime: 7, ready: 3 }), {
            status: 200,
            headers: { 'content-type': 'application/json' },
          })) as typeof fetch;
    feed = new PollingFeed(new Api(() => 'a-key-of-sixteen-chars'), 60_000, shown);
    const drawn: { data?: unknown; error?: Error }[] = [];
    feed.subscribe({ kind: 'queueStats', queue: 'orders' }, (update) => drawn.push(update));
    await settle();
    await settle();
    const answered = feed.state.lastUpdate;
    expect(answered).toBeGreaterThan(0);
    expect(drawn.at(-1)?.data).toEqual({ queueTime: 7, ready: 3 });
    proxied = true;
    await new Promise((resolve) => setTimeout(resolve, 5));
    feed.refresh();
    await settle();
    await settle();
    expect(feed.state.lastUpdate).toBe(answered);
    expect(feed.state.failing).toMatch(
      /^what answered \(200, text\/html, redirected to .*\) is not the API/,
    );
    // The figures stay, said to be old; never replaced by nothing.
    expect(drawn.at(-1)).toMatchObject({ data: { queueTime: 7, ready: 3 } });
    expect(drawn.at(-1)?.error).toBeInstanceOf(NoAnswerError);
  });

  it('says not updating while reads are put off with 429 or 408, and keeps the time of the last answer', async () => {
    let answer: unknown = { queueTime: 1 };
    const api = {
      queueStats: async () => {
        if (answer instanceof Error) throw answer;
        return answer;
      },
    } as unknown as Api;
    feed = new PollingFeed(api, 60_000, shown);
    feed.subscribe({ kind: 'queueStats', queue: 'orders' }, () => {});
    await settle();
    const answered = feed.state.lastUpdate;
    expect(answered).toBeGreaterThan(0);
    for (const putOff of [
      new ApiError(429, 'TOO_MANY_REQUESTS', 'rate limited by the proxy'),
      new ApiError(408, 'REQUEST_TIMEOUT', 'the proxy gave up waiting'),
    ]) {
      answer = putOff;
      await new Promise((resolve) => setTimeout(resolve, 5));
      feed.refresh();
      await settle();
      expect(feed.state).toMatchObject({ lastUpdate: answered, failing: putOff.message });
    }
    // The server answering again makes the page current again.
    answer = { queueTime: 2 };
    feed.refresh();
    await settle();
    expect(feed.state.failing).toBeUndefined();
    expect(feed.state.lastUpdate).toBeGreaterThan(answered);
  });
});
