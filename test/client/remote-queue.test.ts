import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { HttpTransport } from '../../src/client/http.js';
import {
  openRemote,
  type RemoteBroker,
  RemoteError,
  UnknownDeliveryError,
} from '../../src/client/index.js';
import {
  build,
  ClosedError,
  ConflictError,
  type NackOptions,
  NotFoundError,
  SessionClosedError,
  UnsupportedError,
  ValidationError,
} from '../../src/core/index.js';
import { open, type Queue, silentLogger, work } from '../../src/index.js';
import { collectWarnings } from '../process-warnings.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

let server: TestServer;
let clock: ManualClock;
let client: RemoteBroker;

beforeEach(async () => {
  clock = new ManualClock(0);
  server = await startTestServer({ clock });
});

afterEach(async () => {
  await client?.close();
  await server.close();
});

describe.each(['stream', 'http'] as const)(
  'the remote client over %s keeps the Queue interface',
  (transport) => {
    beforeEach(async () => {
      client = await openRemote(server.baseUrl, { transport });
    });

    it('R24 publishes into message groups; deliveries and inspection show them', async () => {
      const q = await client.queue('groups');
      await q.publishBatch([
        { id: 'a1', group: 'a' },
        { id: 'a2', group: 'a' },
        { id: 'b1', group: 'b' },
      ]);
      expect(await q.inspect()).toMatchObject({ ready: ['a1', 'b1'], waiting: ['a2'] });
      expect(await q.job('a2')).toMatchObject({ state: 'waiting', group: 'a' });
      const delivered = await q.receive({ max: 5 });
      expect(delivered.map((d) => [d.id, d.group])).toEqual([
        ['a1', 'a'],
        ['b1', 'b'],
      ]);
      await q.ack(delivered[0]?.token as number);
      expect((await q.receive({ max: 5 })).map((d) => d.id)).toEqual(['a2']);
      expect(await q.stats()).toMatchObject({ waiting: 0, active: 2 });
    });

    it('R23 publishes with priorities, shown by job(), refused outside 0–9 with the same error', async () => {
      const q = await client.queue('priorities');
      await q.publish({ id: 'low' });
      await q.publishBatch([
        { id: 'high', priority: 9 },
        { id: 'mid', priority: 4 },
      ]);
      expect(await q.job('high')).toMatchObject({ id: 'high', state: 'ready', priority: 9 });
      expect((await q.receive({ max: 3 })).map((d) => d.id)).toEqual(['high', 'mid', 'low']);
      await expect(q.publish({ id: 'x', priority: 10 })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    });

    it('R22 receives at most once with ack auto, over /receive and the operations route', async () => {
      const q = await client.queue('auto-ack', { visibility: 5 });
      await q.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      const [first] = await q.receive({ ack: 'auto' });
      expect(first).toMatchObject({ id: 'a', token: 1, deadline: 0, deliveryCount: 1 });
      expect(await q.ack(1)).toBe(false);
      const [outcome] = await q.execute([build.reserve({ max: 5, ack: 'auto' })]);
      expect(outcome).toMatchObject({ ok: true, value: [{ id: 'b' }, { id: 'c' }] });
      expect(await q.stats()).toMatchObject({ ready: 0, active: 0, autoAcked: 3, staleAcks: 1 });
      await expect(q.receive({ ack: 'never' as 'auto' })).rejects.toBeInstanceOf(ValidationError);
    });

    it('runs the worked example of SPEC.md (R2, R3, R6, R8, R12)', async () => {
      const q = await client.queue('worked', { visibility: 5 });
      expect(await q.publish({ id: 'a' })).toEqual({ id: 'a', duplicate: false });
      const [first] = await q.receive();
      expect(first).toEqual({
        token: 1,
        id: 'a',
        payload: undefined,
        deadline: 5,
        deliveryCount: 1,
        redelivered: false,
      });
      clock.set(4);
      expect((await q.inspect()).active.map((a) => a.token)).toEqual([1]);
      clock.set(5);
      expect(await q.ack(1)).toBe(false);
      expect((await q.inspect()).ready).toEqual(['a']);
      const [second] = await q.receive();
      expect(second).toMatchObject({ token: 2, id: 'a', deliveryCount: 2, redelivered: true });
      expect(await q.ack(1)).toBe(false);
      expect((await q.inspect()).active.map((a) => a.token)).toEqual([2]);
      clock.set(6);
      expect(await q.ack(2)).toBe(true);
      expect(await q.inspect()).toEqual({
        queueTime: 6,
        ready: [],
        delayed: [],
        active: [],
        dead: [],
      });
    });

    it('publishes batches all or nothing (R5) and reports duplicates (R4)', async () => {
      const q = await client.queue('batch');
      expect(await q.publishBatch([{ id: 'a', payload: { n: 1 } }, { id: 'b' }])).toEqual([
        { id: 'a', duplicate: false },
        { id: 'b', duplicate: false },
      ]);
      await expect(q.publishBatch([{ id: 'c' }, { id: '' }])).rejects.toBeInstanceOf(
        ValidationError,
      );
      expect((await q.inspect()).ready).toEqual(['a', 'b']);
      expect(await q.publish({ id: 'a' })).toEqual({ id: 'a', duplicate: true });
      expect(await q.publishBatch([])).toEqual([]);
    });

    it('acks, nacks, rejects and extends by token, one entry each (R8, R9, R10)', async () => {
      const q = await client.queue('settle', { visibility: 100, maxLease: 1000 });
      await q.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
      const tokens = (await q.receive({ max: 4 })).map((d) => d.token);
      expect(tokens).toEqual([1, 2, 3, 4]);
      clock.set(10);
      expect(await q.extend(1, 500)).toBe(510);
      expect(await q.extend(1, 5000)).toBe(1000);
      // A token this client never received is a typed error, not a silent false.
      await expect(q.ackMany([1, 99])).rejects.toBeInstanceOf(UnknownDeliveryError);
      expect(await q.ackMany([1, 1])).toEqual([true, false]);
      expect(await q.nack(2, { delay: 50 })).toBe(true);
      expect(await q.reject(3, { requeue: false, reason: 'bad' })).toBe(true);
      expect(await q.nack(3)).toBe(false);
      expect(await q.extend(3, 10)).toBeNull();
      const view = await q.inspect();
      expect(view.delayed).toEqual([{ id: 'b', availableAt: 60 }]);
      expect(view.dead).toEqual([{ id: 'c', reason: 'bad', deliveryCount: 1 }]);
      expect(view.active.map((a) => a.token)).toEqual([4]);
      const [dead] = await q.deadLetters();
      expect(dead?.history).toEqual([
        { token: 3, deliveredAt: 0, endedAt: 10, outcome: 'rejected', reason: 'bad' },
      ]);
      expect(await q.redrive()).toBe(1);
      expect(await q.job('c')).toMatchObject({ id: 'c', state: 'ready', deliveryCount: 0 });
      expect(await q.job('missing')).toBeUndefined();
      expect(await q.purge()).toBe(0);
    });

    it("takes an ack or a receive longer than the server's maxBatch as several entries (R6, R8)", async () => {
      const q = await client.queue('long-lists');
      for (let from = 0; from < 250; from += 100) {
        await q.publishBatch(
          Array.from({ length: Math.min(100, 250 - from) }, (_, i) => ({ id: `j${from + i}` })),
        );
      }
      const first = await q.receive({ max: 150 });
      expect(first.map((d) => d.token)).toEqual(Array.from({ length: 150 }, (_, i) => i + 1));
      const rest = await q.receive({ max: 150 });
      expect(rest.map((d) => d.id)).toEqual(Array.from({ length: 100 }, (_, i) => `j${150 + i}`));
      const tokens = [...first, ...rest].map((d) => d.token);
      expect(await q.ackMany([...tokens, 1])).toEqual([...tokens.map(() => true), false]);
      expect(await q.stats()).toMatchObject({ ready: 0, active: 0, acks: 250, staleAcks: 1 });
    });

    it('runs a worker with a concurrency above maxBatch: every job acked once, none lost', async () => {
      const q = await client.queue('wide-worker', { visibility: 60_000 });
      for (let from = 0; from < 600; from += 100) {
        await q.publishBatch(Array.from({ length: 100 }, (_, i) => ({ payload: from + i })));
      }
      const seen = new Set<number>();
      const worker = await work<number>(
        q,
        async (job) => {
          seen.add(job.payload);
        },
        { concurrency: 150, logger: silentLogger },
      );
      const deadline = Date.now() + 10_000;
      while (worker.metrics().outcomes.acked < 600 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await worker.close();
      expect(worker.metrics()).toMatchObject({
        received: 600,
        outcomes: { acked: 600, 'lease-lost': 0 },
        settleErrors: 0,
        fetchErrors: 0,
      });
      expect(seen.size).toBe(600);
      expect(await q.stats()).toMatchObject({ ready: 0, active: 0, acks: 600, deliveries: 600 });
    });

    it('many receives waiting on one signal hold one listener on it; abort answers them all empty', async () => {
      const q = await client.queue('shared-signal');
      const warnings = collectWarnings();
      const controller = new AbortController();
      const receiving = Array.from({ length: 40 }, () =>
        q.receive({ wait: 20_000, signal: controller.signal }),
      );
      while (getEventListeners(controller.signal, 'abort').length === 0) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      // A round trip after the receives: each of them waits by now.
      await q.stats();
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
      controller.abort();
      expect((await Promise.all(receiving)).flat()).toEqual([]);
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
      expect(warnings.stop()).toEqual([]);
    });

    it('refuses bad tokens as the in-process queue does, before asking the server', async () => {
      const q = await client.queue('tokens');
      await expect(q.ack(0)).rejects.toBeInstanceOf(ValidationError);
      await expect(q.ack(1.5)).rejects.toBeInstanceOf(ValidationError);
      await expect(q.extend(1, -1)).rejects.toBeInstanceOf(ValidationError);
      await expect(q.nack(1, { delay: -1 })).rejects.toBeInstanceOf(ValidationError);
      await expect(q.ack(7)).rejects.toMatchObject({ code: 'UNKNOWN_DELIVERY', token: 7 });
    });

    it('a full receipt book lets settled deliveries go before one still in hand', async () => {
      const small = await openRemote(server.baseUrl, { transport, maxReceipts: 3 });
      try {
        const q = await small.queue('book', { visibility: 1000 });
        await q.publishBatch(['long', 'a', 'b', 'c', 'd', 'e'].map((id) => ({ id })));
        const [long] = await q.receive();
        const settled: number[] = [];
        for (let i = 0; i < 5; i++) {
          const [short] = await q.receive();
          const token = short?.token as number;
          expect(await q.ack(token)).toBe(true);
          settled.push(token);
        }
        // Five others came and went through a book of three: the job in hand keeps its receipt.
        const token = long?.token as number;
        expect(await q.extend(token, 1000)).toBe(1000);
        expect(await q.ack(token)).toBe(true);
        // The latest settled still answer stale; the oldest left the book.
        expect(await q.ack(settled[4] as number)).toBe(false);
        await expect(q.ack(settled[0] as number)).rejects.toBeInstanceOf(UnknownDeliveryError);
      } finally {
        await small.close();
      }
    });

    it('runs sessions: ackUpTo touches only its own session, close releases (R11, R16)', async () => {
      const q = await client.queue('sessions');
      await q.publishBatch(['a', 'b', 'c', 'd'].map((id) => ({ id })));
      const s1 = await q.openSession({ prefetch: 2 });
      const s2 = await q.openSession({ timeout: 100 });
      expect((await q.receive({ max: 5, session: s1 })).map((d) => d.token)).toEqual([1, 2]);
      expect((await q.receive({ session: s2 })).map((d) => d.token)).toEqual([3]);
      expect((await q.inspect()).active.map((a) => a.session)).toEqual([s1, s1, s2]);
      expect(await q.ackUpTo(s1, 1)).toBe(1);
      expect(await q.ackUpTo(s2, 1)).toBe(0);
      expect(await q.nackUpTo(s1, 10)).toBe(1);
      clock.set(50);
      await q.heartbeat(s2);
      clock.set(150);
      await expect(q.heartbeat(s2)).rejects.toBeInstanceOf(SessionClosedError);
      expect(await q.closeSession(s1)).toBe(0);
      await expect(q.heartbeat(s1)).rejects.toBeInstanceOf(SessionClosedError);
      // The error names the session as the caller knows it, its handle, whatever the call.
      for (const wait of [0, 1000]) {
        const error = await q.receive({ session: s1, wait }).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(SessionClosedError);
        expect(error).toMatchObject({ session: s1, message: `session ${s1} has ended` });
      }
      await expect(q.heartbeat('s1')).rejects.toBeInstanceOf(ValidationError);
      expect((await q.stats()).sessionReleases).toBe(1);
    });

    it('R25 refuses bad schedules as the in-process queue does, in the same words, storing nothing', async () => {
      const circular: Record<string, unknown> = {};
      circular.self = circular;
      const throwing = {
        toJSON() {
          throw new Error('nope');
        },
      };
      const calls: [string, (q: Queue) => Promise<unknown>][] = [
        ['bigint name', (q) => q.schedule(1n as never, 60_000)],
        ['bigint timezone', (q) => q.schedule('t', '* * * * *', { timezone: 1n as never })],
        ['bigint every', (q) => q.schedule('t', 1000n as never)],
        ['bigint payload', (q) => q.schedule('t', 60_000, { payload: { n: 1n } })],
        ['circular payload', (q) => q.schedule('t', 60_000, { payload: circular })],
        ['throwing payload', (q) => q.schedule('t', 60_000, { payload: throwing })],
        ['bigint name removed', (q) => q.removeSchedule(1n as never)],
        ['bad name removed', (q) => q.removeSchedule('bad name/..')],
      ];
      const local = await open('memory:');
      try {
        const inProcess = await local.queue('schedules');
        const remote = await client.queue('schedules');
        for (const [label, call] of calls) {
          const want = await call(inProcess).catch((error: unknown) => error);
          const got = await call(remote).catch((error: unknown) => error);
          expect(want, label).toBeInstanceOf(ValidationError);
          expect(got, label).toBeInstanceOf(ValidationError);
          expect((got as Error).message, label).toBe((want as Error).message);
        }
        expect(await remote.schedules()).toEqual([]);
        expect(await inProcess.schedules()).toEqual([]);
        // The queue's own name, shown in the message rather than failing to be.
        const want = await local.queue(1n as never).catch((error: unknown) => error);
        const got = await client.queue(1n as never).catch((error: unknown) => error);
        expect(want).toBeInstanceOf(ValidationError);
        expect((got as Error).message).toBe((want as Error).message);
      } finally {
        await local.close();
      }
    });

    it('R25 answers NOT_FOUND for the schedules of a queue that is gone, as in-process', async () => {
      const local = await open('memory:');
      try {
        for (const [broker, q] of [
          [local, await local.queue('gone')],
          [client, await client.queue('gone')],
        ] as const) {
          await broker.deleteQueue('gone');
          await expect(q.schedules()).rejects.toBeInstanceOf(NotFoundError);
          await expect(q.removeSchedule('tick')).rejects.toBeInstanceOf(NotFoundError);
        }
      } finally {
        await local.close();
      }
    });

    it('brings errors back as the same classes, by code', async () => {
      await client.queue('conflict', { visibility: 10 });
      await expect(client.queue('conflict', { visibility: 20 })).rejects.toBeInstanceOf(
        ConflictError,
      );
      await expect(client.updateQueue('missing', { visibility: 5 })).rejects.toBeInstanceOf(
        NotFoundError,
      );
      await expect(client.queue('bad name')).rejects.toBeInstanceOf(ValidationError);
      await expect(client.handle('missing').stats()).rejects.toBeInstanceOf(NotFoundError);
      await expect(client.transaction(async () => 1)).rejects.toBeInstanceOf(UnsupportedError);
      const q = client.handle('conflict');
      await expect(q.ackReceipts(['Zm9yZ2Vk'])).rejects.toMatchObject({
        code: 'INVALID_RECEIPT',
        status: 400,
      });
      await expect(q.ackReceipts(['Zm9yZ2Vk'])).rejects.toBeInstanceOf(RemoteError);
    });

    it('refuses a misspelt option of nackReceipt as nack does, never dropping it', async () => {
      const q = await client.queue('nack-by-receipt');
      await q.publish({ id: 'a' });
      const [held] = await q.receiveWithReceipts();
      const receipt = held?.receipt as string;
      await expect(
        q.nackReceipt(receipt, { requeu: false } as unknown as NackOptions),
      ).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: 'unknown field "requeu" of nack',
      });
      // Nothing was sent: the job is still held, and the option spelt right dead-letters it.
      expect(await q.stats()).toMatchObject({ active: 1, nacks: 0 });
      expect(await q.nackReceipt(receipt, { requeue: false, reason: 'bad-input' })).toBe(true);
      expect((await q.deadLetters()).map((dead) => [dead.id, dead.reason])).toEqual([
        ['a', 'bad-input'],
      ]);
    });

    it('lists, updates and deletes queues with unbounded options as Infinity', async () => {
      await client.queue('a', { prefetch: 5 });
      expect(await client.updateQueue('a', { prefetch: Number.POSITIVE_INFINITY })).toMatchObject({
        prefetch: Number.POSITIVE_INFINITY,
      });
      expect(await client.listQueues()).toEqual([
        {
          name: 'a',
          options: {
            visibility: 30000,
            prefetch: Number.POSITIVE_INFINITY,
            maxDeliveries: 10,
            maxLease: Number.POSITIVE_INFINITY,
            dedupWindow: 0,
          },
        },
      ]);
      expect(await client.deleteQueue('a')).toBe(true);
      expect(await client.deleteQueue('a')).toBe(false);
    });

    it('once closed refuses handle() at once with CLOSED, as the in-process broker does', async () => {
      const local = await open('memory:');
      await local.close();
      await client.close();
      for (const broker of [local, client]) {
        expect(() => broker.handle('jobs')).toThrow(ClosedError);
        await expect(broker.queue('jobs')).rejects.toBeInstanceOf(ClosedError);
      }
    });
  },
);

describe('a request body that JSON cannot carry', () => {
  it('is a ValidationError before anything is sent, not a server out of reach', async () => {
    let sent = 0;
    const transport = new HttpTransport('http://127.0.0.1:9', {
      fetch: async () => {
        sent += 1;
        return new Response('{}');
      },
    });
    const failed = await transport
      .request('PUT', '/v1/queues/q', { body: { n: 1n } })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(ValidationError);
    expect((failed as Error).message).toMatch(/^the request is not JSON: .*BigInt/);
    expect(sent).toBe(0);
  });
});

describe('a server URL that cannot name a server', () => {
  it.each([
    ['http://', 'is not a valid URL'],
    ['https://', 'is not a valid URL'],
    ['http://:7700', 'is not a valid URL'],
    ['http://127.0.0.1:99999', 'a port from 1 to 65535'],
    ['http://127.0.0.1:0', 'needs a port from 1 to 65535, got 0'],
    ['http://exa mple:7700', 'is not a valid URL'],
    ['http://127.0.0.1:7700/leaseq?x=1', 'must not carry a ?query or #fragment'],
    ['http://127.0.0.1:7700/#top', 'must not carry a ?query or #fragment'],
    ['http://admin:s3cret@127.0.0.1:7700', 'must not carry credentials'],
    ['http://admin:s3cret@127.0.0.1:99999', 'server URL "http://***@127.0.0.1:99999" is not'],
    ['http://admin:s3#cret@127.0.0.1:7700', 'server URL "http://***@127.0.0.1:7700" is not'],
    ['http://127.0.0.1:99999/?token=s3cret', 'server URL "http://127.0.0.1:99999/…" is not'],
    ['http://127.0.0.1:7700 ', 'has a space, a line break or another control character'],
    ['http://127.0.0.1:7700/\t', 'has a space, a line break or another control character'],
    ['http://127.0.0.1:7700/leaseq\n', 'has a space, a line break or another control character'],
  ])('open(%j) is refused at once, before any request', async (url, problem) => {
    let requests = 0;
    const counting: typeof fetch = (input, init) => {
      requests += 1;
      return fetch(input, init);
    };
    for (const attempt of [
      () => open(url, { fetch: counting }),
      () => open(url),
      () => openRemote(url),
    ]) {
      const error = await attempt().then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).message).toContain(problem);
      expect((error as ValidationError).message).not.toContain('s3cret');
    }
    expect(requests).toBe(0);
  });

  it('takes a path prefix, as a proxy serves leaseq under one', async () => {
    const broker = await open('http://127.0.0.1:7700/leaseq/');
    expect((broker as RemoteBroker).baseUrl).toBe('http://127.0.0.1:7700/leaseq');
    await broker.close();
  });
});

describe('open(url) reaches a server', () => {
  beforeEach(async () => {
    client = await openRemote(server.baseUrl);
  });

  /** A fetch that notes each request's method and path. */
  function countingFetch(): { seen: string[]; counting: typeof fetch } {
    const seen: string[] = [];
    const counting: typeof fetch = (input, init) => {
      seen.push(`${init?.method} ${String(input).replace(server.baseUrl, '')}`);
      return fetch(input, init);
    };
    return { seen, counting };
  }

  it('opens http:// URLs through the remote client, with an injectable fetch', async () => {
    const { seen, counting } = countingFetch();
    const broker = await open(server.baseUrl, { fetch: counting });
    const q = await broker.queue('via-open');
    await q.publish({ id: 'x', payload: [1, 2] });
    expect((await q.receive())[0]?.payload).toEqual([1, 2]);
    await broker.close();
    expect(seen).toEqual([
      'GET /v1/queues/via-open',
      'PUT /v1/queues/via-open',
      // The server's limits, asked once, before the first operation.
      'GET /v1/limits',
      'POST /v1/queues/via-open/operations',
      // A receive that does not wait is a reserve operation in a batch request.
      'POST /v1/queues/via-open/operations',
    ]);
  });

  it('nacks through a server from before R33 that knows no attempted field; one that asks for it is refused', async () => {
    // Such a server refuses an unknown field of an operation, whatever its value.
    const older: typeof fetch = (input, init) => {
      const body = typeof init?.body === 'string' ? init.body : '';
      const operations = (JSON.parse(body || '{}') as { operations?: object[] }).operations ?? [];
      if (operations.some((operation) => 'attempted' in operation)) {
        const error = { code: 'INVALID_ARGUMENT', message: 'unknown field "attempted" of nack' };
        return Promise.resolve(Response.json({ error }, { status: 400 }));
      }
      return fetch(input, init);
    };
    const broker = await open(server.baseUrl, { fetch: older });
    const q = await broker.queue('before-r33', { maxDeliveries: 5 });
    await q.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    const [a, b, c] = await q.receive({ max: 3 });
    expect(await q.nack(a?.token as number, { delay: 10 })).toBe(true);
    expect(await q.nack(b?.token as number, { requeue: false, reason: 'bad-input' })).toBe(true);
    expect((await q.deadLetters()).map((dead) => [dead.id, dead.reason])).toEqual([
      ['b', 'bad-input'],
    ]);
    // Given back unworked is a meaning such a server does not have: refused, never dropped.
    await expect(q.nack(c?.token as number, { attempted: false })).rejects.toBeInstanceOf(
      ValidationError,
    );
    expect(await q.stats()).toMatchObject({ active: 1, nacks: 2, unworked: 0 });
    await broker.close();
  });

  it('a field or operation an older server does not know is refused saying to upgrade the server', async () => {
    // The answers of a server from before dead-letter queues and cancel.
    const older: typeof fetch = (input, init) => {
      const body = JSON.parse(typeof init?.body === 'string' ? init.body : '{}') as {
        deadLetterQueue?: string;
        operations?: { type: string }[];
      };
      if (body.deadLetterQueue !== undefined) {
        const error = {
          code: 'INVALID_ARGUMENT',
          message: 'body has an unknown field "deadLetterQueue"',
        };
        return Promise.resolve(Response.json({ error }, { status: 400 }));
      }
      if (body.operations?.[0]?.type === 'cancel') {
        const message = 'type must be one of publish, reserve, ack, nack, extend, got "cancel"';
        const results = [{ ok: false, error: { code: 'INVALID_ARGUMENT', message } }];
        return Promise.resolve(Response.json({ results }));
      }
      return fetch(input, init);
    };
    const broker = await open(server.baseUrl, { fetch: older });
    const upgrade =
      /\(this client knows it: is the server older than the client\? Upgrade the server\)$/;
    await expect(broker.queue('with-dlq', { deadLetterQueue: 'dlq' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(upgrade),
    });
    const q = await broker.queue('plain');
    await expect(q.cancel('a')).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(upgrade),
    });
    // What the caller got wrong is said as before: checked here, never sent.
    await expect(q.publish({ delay: -1 })).rejects.toMatchObject({
      message: expect.not.stringMatching(/Upgrade/),
    });
    await broker.close();
  });

  it('sends concurrent receives that do not wait as one batch request, and long polls as receives', async () => {
    const { seen, counting } = countingFetch();
    const broker = await open(server.baseUrl, { fetch: counting });
    const q = await broker.queue('coalesced');
    await q.publishBatch(
      Array.from({ length: 11 }, (_, i) => ({ id: `j${String(i).padStart(2, '0')}` })),
    );
    seen.length = 0;
    const received = await Promise.all(Array.from({ length: 8 }, () => q.receive({ max: 1 })));
    expect(received.map((deliveries) => deliveries.length)).toEqual(new Array(8).fill(1));
    expect(new Set(received.map((deliveries) => deliveries[0]?.id)).size).toBe(8);
    expect(seen).toEqual(['POST /v1/queues/coalesced/operations']);
    // A receive that waits is a long poll of its own; jobs are ready, so it answers at once.
    expect((await q.receive({ max: 2, wait: 1000 })).map((d) => d.id)).toEqual(['j08', 'j09']);
    expect(seen.at(-1)).toBe('POST /v1/queues/coalesced/receive');
    // One the server refuses (a lease beyond its maxVisibilityMs) is its typed error and takes
    // nothing.
    await expect(q.receive({ max: 1, visibility: 43_200_001 })).rejects.toBeInstanceOf(
      ValidationError,
    );
    expect(seen.at(-1)).toBe('POST /v1/queues/coalesced/operations');
    expect(await q.stats()).toMatchObject({ ready: 1, active: 10 });
    await broker.close();
  });
});
