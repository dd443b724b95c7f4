import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { type RemoteBroker, RemoteError } from '../../src/client/index.js';
import { NotFoundError, ValidationError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const started = await startTestServer(options);
  cleanups.push(() => started.close());
  return started;
}

async function client(
  url: string,
  options: Parameters<typeof open>[1] & object = {},
): Promise<RemoteBroker> {
  const broker = (await open(url, { transport: 'http', ...options })) as RemoteBroker;
  cleanups.push(() => broker.close());
  return broker;
}

/** A fetch that counts the receive requests it sends (long polls). */
function countingFetch() {
  const counted = { polls: 0 };
  const send: typeof fetch = (input, init) => {
    if (String(input).endsWith('/receive')) counted.polls += 1;
    return fetch(input, init);
  };
  return { counted, send };
}

/** An HTTP server on 127.0.0.1 that reads every request and never answers. */
async function silentServer(): Promise<string> {
  const silent: Server = createServer((request) => request.resume());
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        silent.closeAllConnections();
        silent.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
}

function settled<T>(promise: Promise<T>): Promise<T | unknown> {
  return promise.then(
    (value) => value,
    (error: unknown) => error,
  );
}

describe('plain HTTP: a waiting receive against a server that holds no receive (maxWaitMs 0)', () => {
  it('paces its polls instead of sending them back to back', async () => {
    const target = await server({ limits: { maxWaitMs: 0 } });
    const { counted, send } = countingFetch();
    const broker = await client(target.baseUrl, { fetch: send });
    const queue = await broker.queue('jobs');
    expect(await queue.receive({ wait: 1000 })).toEqual([]);
    // About ten polls in that second, not one after the other (some thousands).
    expect(counted.polls).toBeGreaterThan(1);
    expect(counted.polls).toBeLessThanOrEqual(20);
  });

  it('still takes a job published while it waits', async () => {
    const target = await server({ limits: { maxWaitMs: 0 } });
    const { counted, send } = countingFetch();
    const broker = await client(target.baseUrl, { fetch: send });
    const queue = await broker.queue('jobs');
    const waiting = queue.receive({ wait: 20_000 });
    await expect.poll(() => counted.polls).toBeGreaterThan(1);
    await target.broker.handle('jobs').publish({ id: 'a' });
    expect((await waiting).map((delivery) => delivery.id)).toEqual(['a']);
  });

  it('answers empty on its own signal and on close(), between two polls too', async () => {
    const target = await server({ limits: { maxWaitMs: 0 } });
    const { counted, send } = countingFetch();
    const broker = await client(target.baseUrl, { fetch: send });
    const queue = await broker.queue('jobs');
    const controller = new AbortController();
    const aborted = queue.receive({ wait: 600_000, signal: controller.signal });
    await expect.poll(() => counted.polls).toBeGreaterThan(2);
    controller.abort();
    expect(await aborted).toEqual([]);
    const waiting = queue.receive({ wait: 600_000 });
    const before = counted.polls;
    await expect.poll(() => counted.polls).toBeGreaterThan(before + 1);
    await broker.close();
    expect(await waiting).toEqual([]);
  });
});

describe('plain HTTP: a receive waiting for the server limits (read at the first call)', () => {
  it('answers empty on its own signal, as a cut long poll does', async () => {
    const broker = await client(await silentServer(), { timeoutMs: 10_000 });
    const controller = new AbortController();
    const waiting = settled(
      broker.handle('jobs').receive({ wait: 600_000, signal: controller.signal }),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    expect(await waiting).toEqual([]);
  });

  it('answers empty on close(), as a waiting long poll does', async () => {
    const broker = await client(await silentServer(), { timeoutMs: 10_000 });
    const waiting = settled(broker.handle('jobs').receive({ wait: 600_000 }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await broker.close();
    expect(await waiting).toEqual([]);
  });
});

describe.each(['http', 'stream'] as const)(
  'a publish whose payload the server refuses whole, over %s',
  (transport) => {
    const refused: [string, () => unknown, string][] = [
      ['a whole number beyond 2^53 - 1', () => ({ order: 2 ** 60 }), 'beyond 2^53 - 1'],
      ['a __proto__ key', () => JSON.parse('{"__proto__": {"admin": true}}'), '"__proto__"'],
      [
        'a constructor holding prototype',
        () => ({ constructor: { prototype: { admin: true } } }),
        '"constructor" with "prototype"',
      ],
    ];

    it.each(refused)(
      'with %s fails alone, not the calls sent with it',
      async (_, payload, said) => {
        const target = await server();
        const broker = await client(target.baseUrl, { transport });
        const queue = await broker.queue('jobs');
        await queue.publish({ id: 'held' });
        const [held] = await queue.receive();
        const [good, bad, acked, stats] = await Promise.all([
          settled(queue.publish({ id: 'good' })),
          settled(queue.publish({ id: 'bad', payload: payload() })),
          settled(queue.ack(held?.token as number)),
          settled(queue.stats()),
        ]);
        expect(bad).toBeInstanceOf(ValidationError);
        expect(bad).toMatchObject({ code: 'INVALID_ARGUMENT' });
        expect((bad as Error).message).toContain(said);
        expect(good).toEqual({ id: 'good', duplicate: false });
        expect(acked).toBe(true);
        expect(stats).toMatchObject({ acks: 1 });
        expect(await queue.job('bad')).toBeUndefined();
      },
    );

    it('takes what JSON keeps: dates, the largest safe integer, a constructor named as text', async () => {
      const target = await server();
      const broker = await client(target.baseUrl, { transport });
      const queue = await broker.queue('jobs');
      const payload = { at: new Date(0), n: 2 ** 53 - 1, m: -(2 ** 53 - 1), constructor: 'Order' };
      expect(await queue.publish({ id: 'kept', payload })).toEqual({
        id: 'kept',
        duplicate: false,
      });
      expect((await queue.job('kept'))?.payload).toEqual(JSON.parse(JSON.stringify(payload)));
    });
  },
);

describe.each(['http', 'stream'] as const)(
  'a payload nested deeper than the server takes (maxJsonDepth), over %s',
  (transport) => {
    function nested(levels: number): unknown {
      return levels === 0 ? 'leaf' : { inner: nested(levels - 1) };
    }

    it('fails its own publish only, named with the limit; one level less is published', async () => {
      // 8 levels: 5 of a batch request or frame around a payload, 3 for the payload.
      const target = await server({ limits: { maxJsonDepth: 8 } });
      const broker = await client(target.baseUrl, { transport });
      const queue = await broker.queue('jobs');
      const [deep, fits, stats] = await Promise.all([
        settled(queue.publish({ id: 'deep', payload: nested(4) })),
        settled(queue.publish({ id: 'fits', payload: nested(3) })),
        settled(queue.stats()),
      ]);
      expect(deep).toBeInstanceOf(ValidationError);
      expect((deep as Error).message).toContain('maxJsonDepth');
      expect(fits).toEqual({ id: 'fits', duplicate: false });
      expect(stats).toMatchObject({ published: 1 });
      // One publish of several jobs says which one.
      const batch = await settled(
        queue.publishBatch([
          { id: 'x', payload: nested(1) },
          { id: 'y', payload: nested(5) },
        ]),
      );
      expect(batch).toBeInstanceOf(ValidationError);
      expect((batch as Error).message).toContain('jobs[1].payload is nested 5 levels deep');
      expect(await queue.job('x')).toBeUndefined();
    });
  },
);

describe.each(['http', 'stream'] as const)(
  'a payload over the server maxPayloadBytes, over %s',
  (transport) => {
    it('fails its own publish, its job named as the call names it, not by its place among the calls sent together', async () => {
      const target = await server({ limits: { maxPayloadBytes: 1024 } });
      const broker = await client(target.baseUrl, { transport });
      const queue = await broker.queue('jobs');
      // Calls of one tick travel together: the batch is the third operation of what is sent.
      const [first, second, batch, single] = await Promise.all([
        settled(queue.publish({ id: 'a' })),
        settled(queue.publish({ id: 'b' })),
        settled(queue.publishBatch([{ id: 'c' }, { id: 'd', payload: 'x'.repeat(1023) }])),
        settled(queue.publish({ id: 'e', payload: 'x'.repeat(1023) })),
      ]);
      expect([first, second]).toEqual([
        { id: 'a', duplicate: false },
        { id: 'b', duplicate: false },
      ]);
      expect(batch).toBeInstanceOf(RemoteError);
      expect((batch as RemoteError).code).toBe('PAYLOAD_TOO_LARGE');
      expect((batch as Error).message).toBe(
        'jobs[1].payload is 1025 bytes of JSON; the limit is 1024',
      );
      expect((single as Error).message).toBe(
        'job.payload is 1025 bytes of JSON; the limit is 1024',
      );
      expect((await queue.inspect()).ready).toEqual(['a', 'b']);
    });
  },
);

/** `JSON.rawJSON`, where the runtime has it (Node 21 and later): a value JSON writes as its text. */
const rawJSON = (JSON as { rawJSON?: (text: string) => unknown }).rawJSON;

describe.each(['http', 'stream'] as const)(
  'payloads holding JSON.rawJSON values, over %s',
  (transport) => {
    it.skipIf(rawJSON === undefined)(
      'a raw whole number beyond 2^53 - 1 fails its own publish alone',
      async () => {
        const target = await server();
        const broker = await client(target.baseUrl, { transport });
        const queue = await broker.queue('jobs');
        await queue.publish({ id: 'held' });
        const [held] = await queue.receive();
        const [good, bad, acked] = await Promise.all([
          settled(queue.publish({ id: 'good' })),
          settled(queue.publish({ id: 'bad', payload: { n: rawJSON?.('12345678901234567890') } })),
          settled(queue.ack(held?.token as number)),
        ]);
        expect(bad).toBeInstanceOf(ValidationError);
        expect(good).toEqual({ id: 'good', duplicate: false });
        expect(acked).toBe(true);
      },
    );

    it.skipIf(rawJSON === undefined)('a raw number is a leaf, no level of nesting', async () => {
      // 8 levels: 5 around a payload, 3 for it.
      const target = await server({ limits: { maxJsonDepth: 8 } });
      const broker = await client(target.baseUrl, { transport });
      const queue = await broker.queue('jobs');
      const payload = { a: { b: { c: rawJSON?.('1') } } };
      expect(await queue.publish({ id: 'fits', payload })).toEqual({
        id: 'fits',
        duplicate: false,
      });
      expect((await queue.job('fits'))?.payload).toEqual({ a: { b: { c: 1 } } });
    });
  },
);

describe.each(['http', 'stream'] as const)(
  'a URL whose path prefix the server does not serve, over %s',
  (transport) => {
    it('says so, naming the URL, as a NotFoundError', async () => {
      const target = await server();
      const broker = await client(`${target.baseUrl}/leaseq`, { transport });
      const error = await settled(broker.queue('jobs'));
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as Error).message).toContain(`${target.baseUrl}/leaseq has no route`);
      expect((error as Error).message).toContain('path prefix');
      const publish = await settled(broker.handle('jobs').publish({}));
      expect(publish).toBeInstanceOf(NotFoundError);
      expect((publish as Error).message).toContain('path prefix');
      // A missing queue is still said as one.
      const right = await client(target.baseUrl, { transport });
      const missing = await settled(right.handle('nope').publish({}));
      expect(missing).toBeInstanceOf(NotFoundError);
      expect((missing as Error).message).not.toContain('no route');
      expect(missing).not.toBeInstanceOf(RemoteError);
    });
  },
);
