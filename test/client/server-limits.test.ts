import { afterEach, describe, expect, it } from 'vitest';
import type { Channel } from '../../src/client/channel.js';
import type { HttpTransport } from '../../src/client/http.js';
import { openRemote, type RemoteBroker, RemoteError, RemoteQueue } from '../../src/client/index.js';
import { ReceiptBook } from '../../src/client/receipt-book.js';
import { ServerLimitsReader } from '../../src/client/server-limits.js';
import { build, NotFoundError } from '../../src/core/index.js';
import { type OutcomeRecord, RetryableError, ValidationError, work } from '../../src/index.js';
import type { Logger } from '../../src/worker/logger.js';
import { call, startTestServer, type TestServer } from '../server/helpers.js';

let server: TestServer | undefined;
let client: RemoteBroker | undefined;

afterEach(async () => {
  await client?.close();
  await server?.close();
  client = undefined;
  server = undefined;
});

const FRAME = 64 * 1024;

describe('the stream client keeps its batch frames within maxFrameBytes', () => {
  it('splits the calls of one tick into frames that fit; a subscription goes on', async () => {
    server = await startTestServer({ limits: { maxBodyBytes: FRAME, maxPayloadBytes: FRAME } });
    client = await openRemote(server.baseUrl, { transport: 'stream' });
    const other = await client.queue('other');
    const waiting = other.receive({ wait: 5000 });
    const q = await client.queue('big');
    const results = await Promise.allSettled(
      [...Array(30)].map((_, i) => q.publish({ id: `j${i}`, payload: 'p'.repeat(5000) })),
    );
    expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
    expect(await q.stats()).toMatchObject({ ready: 30 });
    // The subscription of the waiting receive was not lost with the connection.
    await other.publish({ id: 'after' });
    expect((await waiting).map((delivery) => delivery.id)).toEqual(['after']);
  });

  it('refuses an operation too large for any frame alone, as HTTP does (PAYLOAD_TOO_LARGE)', async () => {
    server = await startTestServer({ limits: { maxBodyBytes: FRAME, maxPayloadBytes: FRAME } });
    const jobs = [...Array(30)].map((_, i) => ({ id: `j${i}`, payload: 'p'.repeat(5000) }));
    const overHttp = await openRemote(server.baseUrl, { transport: 'http' });
    const httpError = await (await overHttp.queue('big')).publishBatch(jobs).catch((e) => e);
    await overHttp.close();
    expect(httpError).toBeInstanceOf(RemoteError);
    expect(httpError).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', status: 413 });

    client = await openRemote(server.baseUrl, { transport: 'stream' });
    const other = await client.queue('other');
    const waiting = other.receive({ wait: 5000 });
    const q = await client.queue('big');
    const [batch, single, small] = await Promise.allSettled([
      q.publishBatch(jobs),
      q.publish({ id: 'huge', payload: 'p'.repeat(FRAME) }),
      q.publish({ id: 'small' }),
    ]);
    for (const result of [batch, single]) {
      expect(result.status).toBe('rejected');
      const error = (result as PromiseRejectedResult).reason;
      expect(error).toBeInstanceOf(RemoteError);
      expect(error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', status: 413 });
      expect(error.retryable).not.toBe(true);
    }
    expect(small).toEqual({ status: 'fulfilled', value: { id: 'small', duplicate: false } });
    expect((await q.inspect()).ready).toEqual(['small']);
    await other.publish({ id: 'after' });
    expect((await waiting).map((delivery) => delivery.id)).toEqual(['after']);
  });
});

describe('a publishBatch of more jobs than the server’s maxBatch', () => {
  for (const transport of ['stream', 'http'] as const) {
    it(`is refused whole, naming the setting, and publishes nothing (R5, ${transport})`, async () => {
      server = await startTestServer({ limits: { maxBatch: 3 } });
      client = await openRemote(server.baseUrl, { transport });
      const q = await client.queue('many');
      const error = await q
        .publishBatch([...Array(4)].map((_, i) => ({ id: `j${i}` })))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).message).toContain(
        "jobs must have at most 3 entries, got 4 (this server's maxBatch",
      );
      expect(await q.stats()).toMatchObject({ ready: 0, published: 0 });
      // Within it, all of one batch as ever.
      await q.publishBatch([...Array(3)].map((_, i) => ({ id: `j${i}` })));
      expect((await q.inspect()).ready).toEqual(['j0', 'j1', 'j2']);
    });
  }
});

describe('an execute of more operations than the server’s maxBatch', () => {
  for (const transport of ['stream', 'http'] as const) {
    it(`is refused whole and unsent, never split into batches each its own unit (R20, ${transport})`, async () => {
      server = await startTestServer({ limits: { maxBatch: 3 } });
      client = await openRemote(server.baseUrl, { transport });
      const q = await client.queue('units');
      const publishes = (count: number) =>
        [...Array(count)].map((_, i) => build.publish({ id: `u${i}` }));
      const error = await q.execute(publishes(4)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toContain(
        'execute runs its 4 operations as one unit, sent in one batch, and the server takes at most 3 in one (its maxBatch)',
      );
      expect(await q.stats()).toMatchObject({ ready: 0, published: 0 });
      // Within it, one batch, one unit; concurrent calls of one tick still share batches.
      const [together, alone] = await Promise.all([
        q.execute(publishes(3)),
        q.publish({ id: 'x' }),
      ]);
      expect(together.every((outcome) => outcome.ok)).toBe(true);
      expect(alone).toEqual({ id: 'x', duplicate: false });
      expect((await q.inspect()).ready).toEqual(['u0', 'u1', 'u2', 'x']);
    });

    it(`whose operations fit one batch each but not together is refused whole, unsent (${transport})`, async () => {
      server = await startTestServer({ limits: { maxBodyBytes: 4096 } });
      client = await openRemote(server.baseUrl, { transport });
      const q = await client.queue('bytes');
      const big = (id: string) => build.publish({ id, payload: 'x'.repeat(1500) });
      const error = await q.execute([big('b0'), big('b1'), big('b2')]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RemoteError);
      expect(error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', status: 413 });
      expect((error as Error).message).toContain('they run as one unit, sent in one batch');
      expect(await q.stats()).toMatchObject({ published: 0 });
      await q.execute([big('b0'), big('b1')]);
      expect((await q.inspect()).ready).toEqual(['b0', 'b1']);
    });
  }
});

describe('an execute of more operations than the client’s own maxBatch option (HTTP)', () => {
  it('is refused whole and unsent, naming the option that set the limit, not the server', async () => {
    server = await startTestServer({ limits: { maxBatch: 10 } });
    client = await openRemote(server.baseUrl, { transport: 'http', maxBatch: 2 });
    const q = await client.queue('own-limit');
    const error = await q
      .execute([0, 1, 2].map((i) => build.publish({ id: `o${i}` })))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toContain(
      'execute runs its 3 operations as one unit, sent in one batch, and this client sends at most 2 in one (its maxBatch option)',
    );
    expect((error as Error).message).not.toContain('the server takes');
    expect(await q.stats()).toMatchObject({ ready: 0, published: 0 });
  });
});

describe('an ack of more receipts than the server’s maxBatch', () => {
  for (const transport of ['stream', 'http'] as const) {
    it(`goes as entries of maxBatch; one refused fails the call and says what the others did (${transport})`, async () => {
      server = await startTestServer({ limits: { maxBatch: 3 } });
      client = await openRemote(server.baseUrl, { transport });
      const q = (await client.queue('acks')) as RemoteQueue;
      await q.publishBatch([...Array(3)].map((_, i) => ({ id: `a${i}` })));
      await q.publishBatch([{ id: 'a3' }]);
      const receipts = (await q.receive({ max: 3 }))
        .concat(await q.receive())
        .map((delivery) => q.receiptOf(delivery.token) as string);
      expect(await q.ackReceipts(receipts.slice(0, 0))).toEqual([]);
      const error = await q
        .ackReceipts([...receipts, 'AQAAAAAAAAAJbogus'])
        .catch((e: unknown) => e);
      // Done in part: not a call to send again as it was.
      expect(error).toMatchObject({ code: 'INVALID_RECEIPT', mayHaveTakenEffect: true });
      expect((error as Error).message).toContain(
        "this call went as 2 entries of at most the server's maxBatch; 1 of them, not refused, took effect",
      );
      // The first entry's three acks stand; the refused entry acked nothing.
      expect(await q.stats()).toMatchObject({ acks: 3, active: 1 });
    });
  }
});

describe('the stream client sends nothing before it knows the server’s limits', () => {
  it('splits the first tick’s operations by the server’s maxBatch, not its own default', async () => {
    server = await startTestServer({ limits: { maxBatch: 10 } });
    client = await openRemote(server.baseUrl, { transport: 'stream' });
    const q = client.handle('first');
    await server.broker.queue('first');
    const results = await Promise.allSettled(
      [...Array(20)].map((_, i) => q.publish({ id: `j${i}` })),
    );
    expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
    expect(await q.stats()).toMatchObject({ ready: 20 });
  });

  it('serves a first receive whose max is over maxPrefetch with at most maxPrefetch (R6)', async () => {
    server = await startTestServer({ limits: { maxPrefetch: 10 } });
    await (await server.broker.queue('first')).publishBatch(
      [...Array(30)].map((_, i) => ({ id: `j${i}` })),
    );
    client = await openRemote(server.baseUrl, { transport: 'stream' });
    const q = client.handle('first');
    const first = await q.receive({ max: 50, wait: 500 });
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThanOrEqual(10);
    await q.ackMany(first.map((delivery) => delivery.token));
    const next = await q.receive({ max: 50, wait: 500 });
    expect(next.length).toBeGreaterThan(0);
    expect(next.length).toBeLessThanOrEqual(10);
  });
});

describe('the HTTP client shapes its requests by the server’s limits (GET /v1/limits)', () => {
  it('answers the limits to any valid key', async () => {
    server = await startTestServer({ limits: { maxBatch: 3, maxWaitMs: 1000 } });
    const answer = await call(server.baseUrl, 'GET', '/v1/limits');
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ maxBatch: 3, maxWaitMs: 1000, maxBodyBytes: 1024 * 1024 });
  });

  it('splits a long wait into long polls the server accepts', async () => {
    server = await startTestServer({ limits: { maxWaitMs: 300 } });
    client = await openRemote(server.baseUrl, { transport: 'http' });
    const q = await client.queue('polls');
    const waiting = q.receive({ wait: 3000 });
    await new Promise((resolve) => setTimeout(resolve, 700));
    await q.publish({ id: 'late' });
    expect((await waiting).map((delivery) => delivery.id)).toEqual(['late']);
  });

  it('runs a worker with default options against small maxWaitMs and maxBatch', async () => {
    server = await startTestServer({ limits: { maxWaitMs: 300, maxBatch: 3 } });
    client = await openRemote(server.baseUrl, { transport: 'http' });
    const q = await client.queue('work');
    const problems: string[] = [];
    const logger: Logger = {
      info() {},
      warn: (_fields, message) => problems.push(message),
      error: (fields, message) => problems.push(`${message} ${JSON.stringify(fields)}`),
    };
    const done = new Set<string>();
    const worker = await work(q, async (job) => void done.add(job.id), { concurrency: 8, logger });
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      await Promise.all([...Array(10)].map((_, i) => q.publish({ id: `j${i}` })));
      const until = Date.now() + 5000;
      while (done.size < 10 && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await worker.close();
    }
    expect(problems).toEqual([]);
    expect(done.size).toBe(10);
  });

  it('splits the calls of one tick into bodies within maxBodyBytes; one too large fails alone', async () => {
    server = await startTestServer({ limits: { maxBodyBytes: FRAME, maxPayloadBytes: FRAME } });
    client = await openRemote(server.baseUrl, { transport: 'http' });
    const q = await client.queue('big');
    const results = await Promise.allSettled(
      [...Array(30)].map((_, i) => q.publish({ id: `j${i}`, payload: 'p'.repeat(5000) })),
    );
    expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
    const [huge, small] = await Promise.allSettled([
      q.publish({ id: 'huge', payload: 'p'.repeat(FRAME) }),
      q.publish({ id: 'small' }),
    ]);
    expect(huge).toMatchObject({
      status: 'rejected',
      reason: { code: 'PAYLOAD_TOO_LARGE', status: 413 },
    });
    expect(small).toEqual({ status: 'fulfilled', value: { id: 'small', duplicate: false } });
    expect(await q.stats()).toMatchObject({ ready: 31 });
  });
});

describe("a worker over a server keeps to the server's longest delay and lease", () => {
  const MINUTE = 60_000;
  const limits = { maxDelayMs: MINUTE, maxVisibilityMs: MINUTE };

  for (const transport of ['stream', 'http'] as const) {
    it(`answers the server's limits to a remote queue (${transport})`, async () => {
      server = await startTestServer({ limits });
      client = await openRemote(server.baseUrl, { transport });
      const q = await client.queue('bounds');
      expect(await q.limits()).toEqual({
        maxDelayMs: MINUTE,
        maxVisibilityMs: MINUTE,
        maxBatch: 100,
        maxBodyBytes: 1024 * 1024,
      });
    });
  }

  it('retries a RetryableError whose delay is above maxDelayMs after maxDelayMs, not after its lease', async () => {
    server = await startTestServer({ limits });
    client = await openRemote(server.baseUrl);
    const q = await client.queue('later', { visibility: 1000 });
    await q.publish({ id: 'j1' });
    const errors: string[] = [];
    const logger: Logger = {
      info() {},
      warn() {},
      error: (_fields, message) => errors.push(message),
    };
    const outcomes: OutcomeRecord[] = [];
    const worker = await work(
      q,
      async () => {
        throw new RetryableError('rate limited', { delay: 10 * MINUTE });
      },
      { logger },
    );
    worker.on('outcome', (record) => outcomes.push(record));
    const until = Date.now() + 5000;
    while (outcomes.length === 0 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await worker.close();
    expect(errors).toEqual([]);
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]).toMatchObject({ outcome: 'retried', id: 'j1' });
    expect(outcomes[0]?.error).toContain('its delay of 600000 ms is above the longest');
    expect(await q.stats()).toMatchObject({ active: 0, delayed: 1, nacks: 1 });
    const { delayed, queueTime } = await q.inspect();
    expect(delayed).toHaveLength(1);
    // Nacked with MINUTE from a queue time a moment before this read.
    const wait = (delayed[0]?.availableAt ?? 0) - queueTime;
    expect(wait).toBeGreaterThan(MINUTE - 5000);
    expect(wait).toBeLessThanOrEqual(MINUTE);
  });

  it('refuses at start a visibility above maxVisibilityMs, its own or its queue’s, receiving nothing', async () => {
    server = await startTestServer({ limits });
    client = await openRemote(server.baseUrl);
    const q = await client.queue('long-lease');
    await q.publish({ id: 'j1' });
    const own = await work(q, async () => {}, { visibility: 2 * MINUTE }).catch((e) => e);
    expect(own).toBeInstanceOf(ValidationError);
    expect(own.message).toContain('visibility is 120000 ms, above the longest lease');
    // A queue made in the server's own process is not bounded by its HTTP limits.
    await server.broker.queue('long-queue', { visibility: 2 * MINUTE });
    const queues = await client.queue('long-queue');
    const theirs = await work(queues, async () => {}).catch((e) => e);
    expect(theirs).toBeInstanceOf(ValidationError);
    expect(theirs.message).toContain("the queue's visibility is 120000 ms");
    expect(await q.stats()).toMatchObject({ ready: 1, deliveries: 0 });
  });

  it('refuses at start a backoff.maxDelay above maxDelayMs; at most once, neither applies', async () => {
    server = await startTestServer({ limits });
    client = await openRemote(server.baseUrl);
    const q = await client.queue('long-backoff');
    const refused = await work(q, async () => {}, {
      backoff: { baseDelay: 1000, maxDelay: 2 * MINUTE },
    }).catch((e) => e);
    expect(refused).toBeInstanceOf(ValidationError);
    expect(refused.message).toContain('backoff.maxDelay is 120000 ms, above the longest delay');
    const atMostOnce = await work(q, async () => {}, {
      ack: 'auto',
      backoff: { baseDelay: 1000, maxDelay: 2 * MINUTE },
    });
    await atMostOnce.close();
  });
});

describe('a remote queue asks the server for its limits', () => {
  const queueOver = (request: () => Promise<unknown>) => {
    const http = { request } as unknown as HttpTransport;
    return new RemoteQueue(
      'q',
      http,
      {} as Channel,
      new ReceiptBook(8),
      new ServerLimitsReader(http),
    );
  };

  it('takes a server without GET /v1/limits (older than it) to bound nothing it can know', async () => {
    const queue = queueOver(async () => {
      throw new NotFoundError('no route GET /v1/limits');
    });
    expect(await queue.limits()).toEqual({
      maxDelayMs: Number.POSITIVE_INFINITY,
      maxVisibilityMs: Number.POSITIVE_INFINITY,
      maxBatch: 100,
      maxBodyBytes: Number.POSITIVE_INFINITY,
    });
  });

  it('lets any other failure through, so that work() fails to start rather than guess; asks again after it', async () => {
    let asked = 0;
    const queue = queueOver(async () => {
      asked += 1;
      if (asked === 1) throw new RemoteError('UNAUTHENTICATED', 401, 'no key');
      return { maxBatch: 100, maxDelayMs: 5000, maxVisibilityMs: 7000 };
    });
    await expect(queue.limits()).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(await queue.limits()).toEqual({
      maxDelayMs: 5000,
      maxVisibilityMs: 7000,
      maxBatch: 100,
      maxBodyBytes: Number.POSITIVE_INFINITY,
    });
    // Known once, for every queue and the HTTP channel of the client.
    expect(await queue.limits()).toEqual({
      maxDelayMs: 5000,
      maxVisibilityMs: 7000,
      maxBatch: 100,
      maxBodyBytes: Number.POSITIVE_INFINITY,
    });
    expect(asked).toBe(2);
  });
});
