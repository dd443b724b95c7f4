import { afterEach, describe, expect, it } from 'vitest';
import { NotFoundError } from '../../src/core/index.js';
import { open, RemoteBroker, RemoteError } from '../../src/index.js';
import { startTestServer } from '../server/helpers.js';
import { type ForeignAnswer, startForeignServer } from './foreign-server.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server that is not leaseq, answering every request with `answer`, closed after the test. */
async function foreignServer(answer: ForeignAnswer): Promise<string> {
  const server = await startForeignServer(answer);
  cleanups.push(server.close);
  return server.url;
}

function client(url: string, options: ConstructorParameters<typeof RemoteBroker>[1] = {}) {
  const broker = new RemoteBroker(url, { timeoutMs: 5000, ...options });
  cleanups.push(() => broker.close());
  return broker;
}

async function failure(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    (value) => ({ resolved: value }),
    (error: unknown) => error,
  );
}

const ANSWERS = [
  {
    name: 'an HTML page (200 text/html)',
    answer: {
      status: 200,
      headers: { 'content-type': 'text/html; charset=utf-8' },
      body: '<html><body>welcome</body></html>',
    },
    said: '200 text/html, not a leaseq API answer',
  },
  {
    name: 'an HTML not-found page (404 text/html)',
    answer: {
      status: 404,
      headers: { 'content-type': 'text/html' },
      body: '<html><body>not found</body></html>',
    },
    said: '404 text/html, not a leaseq API answer',
  },
  {
    name: 'JSON of another API (200 application/json)',
    answer: { status: 200, headers: { 'content-type': 'application/json' }, body: '{"hello":1}' },
    said: '200 application/json of another shape, not a leaseq API answer',
  },
  {
    name: 'a bad gateway with an empty body (502)',
    answer: { status: 502, headers: {}, body: '' },
    said: '502 with an empty body, not a leaseq API answer',
  },
] as const;

/** The calls a user makes first, each against a fresh client. */
const CALLS: Record<string, (broker: RemoteBroker) => Promise<unknown>> = {
  'queue()': (broker) => broker.queue('jobs'),
  listQueues: (broker) => broker.listQueues(),
  publish: (broker) => broker.handle('jobs').publish({ payload: 1 }),
  'receive without waiting': (broker) => broker.handle('jobs').receive({ wait: 0 }),
  'receive that waits': (broker) => broker.handle('jobs').receive({ wait: 50 }),
  stats: (broker) => broker.handle('jobs').stats(),
};

describe('a server that is not leaseq is said to be one, with what it answered', () => {
  for (const { name, answer, said } of ANSWERS) {
    for (const transport of ['http', 'stream'] as const) {
      it(`${name}, over ${transport}: every call fails with a RemoteError HTTP_${answer.status} naming the URL`, async () => {
        const url = await foreignServer(answer);
        for (const [call, run] of Object.entries(CALLS)) {
          const error = await failure(run(client(url, { transport })));
          expect(error, call).toBeInstanceOf(RemoteError);
          expect(error, call).toMatchObject({
            code: `HTTP_${answer.status}`,
            status: answer.status,
          });
          const message = (error as Error).message;
          expect(message, call).toContain(`the server at ${url} answered `);
          expect(message, call).toContain(said);
          expect(message, call).toContain(
            answer.status >= 500
              ? "is this a leaseq server's URL, or a proxy in front of one that cannot reach it?"
              : "is this a leaseq server's URL?",
          );
        }
      });
    }
  }

  it('takes a results list of another API (a paged list) for no answer of operations', async () => {
    for (const body of ['{"count":0,"results":[]}', '{"results":[{"id":1},{"id":2}]}']) {
      const url = await foreignServer({
        status: 200,
        headers: { 'content-type': 'application/json' },
        body,
      });
      const published = await failure(
        client(url, { transport: 'http' }).handle('jobs').publish({ payload: 1 }),
      );
      expect(published).toBeInstanceOf(RemoteError);
      expect((published as Error).message).toBe(
        `the server at ${url} answered POST /v1/queues/jobs/operations with 200 application/json of another shape, not a leaseq API answer: is this a leaseq server's URL?`,
      );
    }
  });

  it('names the request that got the answer, over plain HTTP and over the stream', async () => {
    const url = await foreignServer(ANSWERS[0].answer);
    const listed = await failure(client(url, { transport: 'http' }).listQueues());
    expect((listed as Error).message).toBe(
      `the server at ${url} answered GET /v1/queues with 200 text/html, not a leaseq API answer: is this a leaseq server's URL?`,
    );
    const published = await failure(
      client(url, { transport: 'stream' }).handle('jobs').publish({ payload: 1 }),
    );
    expect((published as Error).message).toBe(
      `the server at ${url} answered GET /v1/stream (the stream's WebSocket upgrade) with 200 text/html, not a leaseq API answer: is this a leaseq server's URL?`,
    );
  });

  it('is said the same when requests go through a fetch', async () => {
    const url = await foreignServer(ANSWERS[2].answer);
    const error = await failure(client(url, { fetch: globalThis.fetch }).listQueues());
    expect(error).toBeInstanceOf(RemoteError);
    expect((error as Error).message).toBe(
      `the server at ${url} answered GET /v1/queues with 200 application/json of another shape, not a leaseq API answer: is this a leaseq server's URL?`,
    );
  });

  it('a JSON answer whose list is not a list is not taken for a leaseq answer', async () => {
    const url = await foreignServer({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"queues":"none","results":7,"deliveries":{}}',
    });
    for (const call of [
      client(url, { transport: 'http' }).listQueues(),
      client(url, { transport: 'http' }).handle('jobs').publish({ payload: 1 }),
    ]) {
      const error = await failure(call);
      expect(error).toBeInstanceOf(RemoteError);
      expect((error as Error).message).toContain('of another shape, not a leaseq API answer');
    }
  });

  it('a redirect says where it leads, without its query', async () => {
    const url = await foreignServer({
      status: 301,
      headers: { location: 'https://leaseq.invalid/v1/queues?token=secret' },
      body: '',
    });
    const error = await failure(client(url, { transport: 'http' }).listQueues());
    expect(error).toMatchObject({ code: 'HTTP_301', status: 301 });
    expect((error as Error).message).toBe(
      `the server at ${url} answered GET /v1/queues with 301 with an empty body, not a leaseq API answer: it redirects to https://leaseq.invalid/…, and the client follows no redirects: give the server's URL as it ends up`,
    );
  });

  it('open() of its URL fails the first call the same way', async () => {
    const url = await foreignServer(ANSWERS[1].answer);
    const broker = await open(url);
    cleanups.push(() => broker.close());
    const error = await failure(broker.queue('jobs'));
    expect(error).toBeInstanceOf(RemoteError);
    expect((error as Error).message).toContain(`the server at ${url} answered GET /v1/queues/jobs`);
  });
});

describe('a server URL that ends in the API prefix /v1', () => {
  for (const transport of ['http', 'stream'] as const) {
    for (const suffix of ['/v1', '/v1/']) {
      it(`is taken for the server root over ${transport} (${suffix})`, async () => {
        const server = await startTestServer();
        cleanups.push(() => server.close());
        const broker = client(`${server.baseUrl}${suffix}`, { transport });
        expect(broker.baseUrl).toBe(server.baseUrl);
        const queue = await broker.queue('jobs');
        await queue.publish({ id: 'a', payload: 1 });
        expect(await broker.listQueues()).toEqual([expect.objectContaining({ name: 'jobs' })]);
        const [delivery] = await queue.receive({ wait: 1000 });
        expect(delivery?.id).toBe('a');
        expect(await queue.ack(delivery?.token ?? 0)).toBe(true);
        expect((await (await server.broker.queue('jobs')).stats()).ready).toBe(0);
        // A leaseq error answer is still the error class it stands for.
        await expect(broker.handle('missing').stats()).rejects.toBeInstanceOf(NotFoundError);
      });
    }
  }

  it('keeps any other path prefix, one ending in v1 too, and a host named v1', () => {
    expect(client('http://127.0.0.1:9/leaseq/').baseUrl).toBe('http://127.0.0.1:9/leaseq');
    // A proxy may serve leaseq under a prefix that ends in /v1: kept as given.
    expect(client('http://127.0.0.1:9/leaseq/v1').baseUrl).toBe('http://127.0.0.1:9/leaseq/v1');
    expect(client('http://127.0.0.1:9/api/v1/').baseUrl).toBe('http://127.0.0.1:9/api/v1');
    expect(client('http://127.0.0.1:9/v10').baseUrl).toBe('http://127.0.0.1:9/v10');
    expect(client('http://v1/').baseUrl).toBe('http://v1');
    expect(client('http://v1:7700/v1').baseUrl).toBe('http://v1:7700');
  });
});
