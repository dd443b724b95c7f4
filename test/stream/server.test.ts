import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { ManualClock, type Queue } from '../../src/broker/index.js';
import { call, captureLogs, startTestServer, type TestServer } from '../server/helpers.js';
import { FrameClient } from './frames.js';

const ADMIN = 'admin-key-0123456789';
const PRODUCER = 'producer-key-0123456789';
const CONSUMER = 'consumer-key-0123456789';
const KEYS = [
  { name: 'admin', key: ADMIN, allow: [{ queues: '*', actions: ['admin' as const] }] },
  { name: 'producer', key: PRODUCER, allow: [{ queues: 'jobs', actions: ['publish' as const] }] },
  { name: 'consumer', key: CONSUMER, allow: [{ queues: 'jobs', actions: ['consume' as const] }] },
];

const open: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const each of open.splice(0).reverse()) await each.close();
});

async function serve(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const server = await startTestServer(options);
  open.push(server);
  await call(server.baseUrl, 'PUT', '/v1/queues/jobs', {
    body: { visibility: 1000 },
    ...(options.keys === undefined ? {} : { apiKey: ADMIN }),
  });
  return server;
}

async function connect(server: TestServer, apiKey?: string): Promise<FrameClient> {
  const client = await FrameClient.open(server.baseUrl, apiKey);
  open.push(client);
  return client;
}

const publish = (ids: string[]) => ({
  type: 'publish',
  jobs: ids.map((id) => ({ id, payload: { id } })),
});

async function stats(server: TestServer, apiKey?: string) {
  const answer = await call(server.baseUrl, 'GET', '/v1/queues/jobs/stats', {
    ...(apiKey === undefined ? {} : { apiKey }),
  });
  return answer.body;
}

/** What a loopback connection's two ends may buffer at most: receive plus send, in bytes. */
function socketBufferBytes(): number {
  const most = (path: string, fallback: number) => {
    try {
      return Number(readFileSync(path, 'utf8').trim().split(/\s+/)[2]) || fallback;
    } catch {
      return fallback;
    }
  };
  return (
    most('/proc/sys/net/ipv4/tcp_rmem', 6 * 1024 * 1024) +
    most('/proc/sys/net/ipv4/tcp_wmem', 4 * 1024 * 1024)
  );
}

/** The results of one batch frame on the `jobs` queue. */
async function batch(client: FrameClient, id: number, operations: unknown[]) {
  return (await client.request({ type: 'batch', id, queue: 'jobs', operations })).results;
}

const settle = (ms = 50) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the stream: batches of operations', () => {
  it('starts with a ready frame naming its limits', async () => {
    const client = await connect(await serve({ limits: { maxPrefetch: 7 } }));
    expect(client.frames[0]).toEqual({
      type: 'ready',
      version: '1',
      limits: {
        maxFrameBytes: 1024 * 1024,
        maxBatch: 100,
        maxPrefetch: 7,
        maxSubscriptions: 64,
        heartbeatMs: 15_000,
        maxJsonDepth: 64,
      },
    });
  });

  it('answers batch frames in the order they came, each operation on its own', async () => {
    const client = await connect(await serve());
    client.send({ type: 'batch', id: 1, queue: 'jobs', operations: [publish(['a', 'b'])] });
    client.send({
      type: 'batch',
      id: 2,
      queue: 'jobs',
      operations: [{ type: 'reserve', max: 2 }, { type: 'stats' }, { type: 'nope' }],
    });
    const second = await client.next((frame) => frame.id === 2);
    const answers = client.frames.filter((frame) => frame.type === 'results');
    expect(answers.map((frame) => frame.id)).toEqual([1, 2]);
    expect(answers[0].results).toEqual([
      {
        ok: true,
        value: [
          { id: 'a', duplicate: false },
          { id: 'b', duplicate: false },
        ],
      },
    ]);
    const [reserved, stat, bad] = second.results;
    expect(reserved.value.map((d: { id: string }) => d.id)).toEqual(['a', 'b']);
    expect(typeof reserved.value[0].receipt).toBe('string');
    expect(stat.value).toMatchObject({ ready: 0, active: 2 });
    expect(bad).toMatchObject({ ok: false, error: { code: 'INVALID_ARGUMENT' } });
    const ack = await client.request({
      type: 'batch',
      id: 3,
      queue: 'jobs',
      operations: [
        { type: 'ack', receipts: reserved.value.map((d: { receipt: string }) => d.receipt) },
      ],
    });
    expect(ack.results).toEqual([{ ok: true, value: [true, true] }]);
  });

  it('refuses a forged receipt or a bare token per operation, changing nothing', async () => {
    const server = await serve();
    const client = await connect(server);
    await client.request({ type: 'batch', id: 1, queue: 'jobs', operations: [publish(['a'])] });
    const [reserved] = await batch(client, 2, [{ type: 'reserve' }]);
    const receipt: string = reserved.value[0].receipt;
    const forged = `${receipt.slice(0, -2)}${receipt.endsWith('AA') ? 'AB' : 'AA'}`;
    const answer = await client.request({
      type: 'batch',
      id: 3,
      queue: 'jobs',
      operations: [
        { type: 'ack', receipts: [forged] },
        { type: 'nack', token: 1 },
        { type: 'extend', receipt: forged, visibility: 10 },
      ],
    });
    expect(answer.results.map((r: { error: { code: string } }) => r.error.code)).toEqual([
      'INVALID_RECEIPT',
      'INVALID_ARGUMENT',
      'INVALID_RECEIPT',
    ]);
    expect(await stats(server)).toMatchObject({ active: 1, acks: 0, nacks: 0 });
  });

  it('refuses a publish over maxPayloadBytes in its own outcome, naming the job, storing nothing', async () => {
    const server = await serve({ limits: { maxPayloadBytes: 1024 } });
    const client = await connect(server);
    const results = await batch(client, 1, [
      { type: 'publish', jobs: [{ id: 'fine' }, { id: 'big', payload: 'a'.repeat(1023) }] },
      { type: 'stats' },
    ]);
    expect(results[0]).toEqual({
      ok: false,
      error: {
        code: 'PAYLOAD_TOO_LARGE',
        message: 'operations[0].jobs[1].payload is 1025 bytes of JSON; the limit is 1024',
      },
    });
    expect(results[1]).toMatchObject({ ok: true, value: { ready: 0 } });
    expect(await stats(server)).toMatchObject({ ready: 0, published: 0 });
  });

  it('answers a batch for a missing queue, or over maxBatch, with an error frame', async () => {
    const client = await connect(await serve({ limits: { maxBatch: 2 } }));
    const missing = await client.request({
      type: 'batch',
      id: 1,
      queue: 'missing',
      operations: [{ type: 'stats' }],
    });
    expect(missing).toMatchObject({ type: 'error', id: 1, error: { code: 'NOT_FOUND' } });
    const tooMany = await client.request({
      type: 'batch',
      id: 2,
      queue: 'jobs',
      operations: [{ type: 'stats' }, { type: 'stats' }, { type: 'stats' }],
    });
    expect(tooMany).toMatchObject({ type: 'error', id: 2, error: { code: 'INVALID_ARGUMENT' } });
  });
});

describe('the stream: bad frames get a typed error frame and change nothing', () => {
  const BAD: [string, unknown, string][] = [
    ['not JSON', '{"type":', 'a frame must be JSON text'],
    ['not an object', '[1,2]', 'a frame must be a JSON object'],
    ['an unknown type', { type: 'dance', id: 1 }, 'type must be one of'],
    // Names of Object.prototype's members are no frame types, nor fields.
    ['a type named toString', { type: 'toString' }, 'type must be one of'],
    ['a type named __proto__', '{"type":"__proto__","id":1}', 'type must be one of'],
    ['a type named constructor', { type: 'constructor', id: 1 }, 'type must be one of'],
    [
      'a field named toString',
      { type: 'subscribe', id: 1, queue: 'jobs', prefetch: 1, toString: 1 },
      'unknown field toString',
    ],
    [
      'a field named constructor',
      { type: 'batch', id: 1, queue: 'jobs', operations: [publish(['x'])], constructor: 1 },
      'unknown field constructor',
    ],
    ['no id', { type: 'batch', queue: 'jobs', operations: [publish(['x'])] }, 'id is required'],
    ['a bad id', { type: 'batch', id: -1, queue: 'jobs', operations: [publish(['x'])] }, 'id must'],
    [
      'a bad queue name',
      { type: 'batch', id: 1, queue: 'a b', operations: [publish(['x'])] },
      'queue must',
    ],
    ['no operations', { type: 'batch', id: 1, queue: 'jobs', operations: [] }, 'operations must'],
    [
      'an unknown field',
      { type: 'batch', id: 1, queue: 'jobs', operations: [publish(['x'])], extra: 1 },
      'unknown field extra',
    ],
    ['a prefetch of 0', { type: 'subscribe', id: 1, queue: 'jobs', prefetch: 0 }, 'prefetch must'],
    [
      'too deep',
      JSON.stringify({
        type: 'batch',
        id: 1,
        queue: 'jobs',
        operations: [publish(['x'])],
        deep: nest(80),
      }),
      'nested more than',
    ],
    [
      'a __proto__ key in a payload (refused over HTTP too)',
      '{"type":"batch","id":1,"queue":"jobs","operations":[{"type":"publish","jobs":[{"payload":{"__proto__":{"admin":true}}}]}]}',
      'holds a "__proto__" key',
    ],
    [
      'a payload integer beyond 2^53',
      '{"type":"batch","id":1,"queue":"jobs","operations":[{"type":"publish","jobs":[{"payload":12345678901234567890}]}]}',
      'at most 2^53 - 1',
    ],
    [
      'a payload number too small for a double, which would read as 0',
      '{"type":"batch","id":1,"queue":"jobs","operations":[{"type":"publish","jobs":[{"payload":[0,1e-400]}]}]}',
      '1e-400, which is not 0 but too small for a double',
    ],
  ];

  it.each(BAD)('%s', async (_name, frame, message) => {
    const server = await serve();
    const client = await connect(server);
    client.send(frame);
    const error = await client.next((each) => each.type === 'error');
    expect(error.error.code).toBe('INVALID_ARGUMENT');
    expect(error.error.message).toContain(message);
    expect(await stats(server)).toMatchObject({ published: 0, ready: 0 });
    // The connection goes on.
    const after = await client.request({
      type: 'batch',
      id: 50,
      queue: 'jobs',
      operations: [{ type: 'stats' }],
    });
    expect(after.type).toBe('results');
  });

  it('refuses binary frames', async () => {
    const client = await connect(await serve());
    client.socket.send(Buffer.from('{}'), { binary: true });
    const error = await client.next((each) => each.type === 'error');
    expect(error.error).toEqual({
      code: 'INVALID_ARGUMENT',
      message: 'frames are JSON text, not binary',
    });
  });

  it('closes the connection with 1009 on a frame over maxBodyBytes', async () => {
    const client = await connect(
      await serve({ limits: { maxBodyBytes: 2048, maxPayloadBytes: 1024 } }),
    );
    client.send({
      type: 'batch',
      id: 1,
      queue: 'jobs',
      operations: [{ type: 'publish', jobs: [{ payload: 'x'.repeat(4000) }] }],
    });
    expect(await client.closed).toBe(1009);
  });

  it('closes the connection with 1008 on a message in more than 16,384 fragments', async () => {
    const client = await connect(await serve());
    // Empty fragments: the count is what is bounded, not the size.
    for (let fragment = 0; fragment <= 16_384; fragment++) {
      client.socket.send('', { fin: false });
    }
    client.socket.send('', { fin: true });
    expect(await client.closed).toBe(1008);
  });
});

function nest(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe('the stream: subscriptions', () => {
  it('pushes deliveries as soon as they are published, never more than the prefetch', async () => {
    const server = await serve();
    const client = await connect(server);
    const subscribed = await client.request({
      type: 'subscribe',
      id: 1,
      queue: 'jobs',
      prefetch: 2,
    });
    expect(subscribed).toEqual({ type: 'subscribed', id: 1, subscription: 1, prefetch: 2 });
    await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs/batch', {
      body: { jobs: ['a', 'b', 'c', 'd'].map((id) => ({ id })) },
    });
    await client.next(() => client.pushed(1).length >= 2);
    await settle(100);
    const pushed = client.pushed(1);
    expect(pushed.map((d: { id: string }) => d.id)).toEqual(['a', 'b']);
    expect(await stats(server)).toMatchObject({ ready: 2, active: 2 });
    // An ack through the connection gives its credit back: the next job is pushed.
    await client.request({
      type: 'batch',
      id: 2,
      queue: 'jobs',
      operations: [{ type: 'ack', receipts: [pushed[0].receipt] }],
    });
    await client.next(() => client.pushed(1).length >= 3);
    await settle(100);
    expect(client.pushed(1).map((d: { id: string }) => d.id)).toEqual(['a', 'b', 'c']);
    // A nack gives it back too; a raised prefetch makes room at once.
    await client.request({
      type: 'batch',
      id: 3,
      queue: 'jobs',
      operations: [{ type: 'nack', receipt: pushed[1].receipt, requeue: false }],
    });
    await client.next(() => client.pushed(1).length >= 4);
    expect(
      await client.request({ type: 'credit', id: 4, subscription: 1, prefetch: 10 }),
    ).toMatchObject({ type: 'subscribed', prefetch: 10 });
    expect(await client.request({ type: 'unsubscribe', id: 5, subscription: 1 })).toEqual({
      type: 'unsubscribed',
      id: 5,
      subscription: 1,
    });
    expect(await stats(server)).toMatchObject({ ready: 0, active: 2, acks: 1, dead: 1 });
  });

  it('pushes the jobs ready when it subscribes in one frame, up to the prefetch', async () => {
    const server = await serve();
    await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs/batch', {
      body: { jobs: Array.from({ length: 12 }, (_, index) => ({ id: `j${index}` })) },
    });
    const client = await connect(server);
    await client.request({ type: 'subscribe', id: 1, queue: 'jobs', prefetch: 10 });
    await client.next(() => client.pushed(1).length >= 10);
    await settle(100);
    const frames = client.frames.filter((frame) => frame.type === 'deliveries');
    expect(frames.map((frame) => frame.deliveries.length)).toEqual([10]);
    expect(await stats(server)).toMatchObject({ ready: 2, active: 10, nacks: 0 });
  });

  it.each([
    ['x', 8 * 1024],
    // 3 bytes a character: the bounds are bytes, as the socket counts them, not characters.
    ['中', Math.floor((8 * 1024) / 3)],
  ])(
    'splits a push larger than a frame may be, and gives back unsent what the buffer bound leaves (payload of %s)',
    async (character, length) => {
      const { lines, logger } = captureLogs('info');
      // Frames of at most 16 KiB (the smaller of the body and buffer bounds); 8 KiB payloads.
      const server = await serve({
        logger,
        limits: { maxBodyBytes: 16 * 1024, maxStreamBufferBytes: 16 * 1024 },
      });
      const payload = character.repeat(length);
      for (let index = 0; index < 6; index++) {
        await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs', {
          body: { id: `j${index}`, payload },
        });
      }
      const client = await connect(server);
      await client.request({ type: 'subscribe', id: 1, queue: 'jobs', prefetch: 6 });
      await client.next(() => client.pushed(1).length >= 6, 10_000);
      await settle(100);
      const frames = client.frames.filter((frame) => frame.type === 'deliveries');
      expect(frames.length).toBeGreaterThan(1);
      for (const frame of frames) {
        expect(Buffer.byteLength(JSON.stringify(frame))).toBeLessThanOrEqual(16 * 1024);
      }
      // Each job pushed once, in order: what did not fit went out later, or back to ready first.
      const ids = client.pushed(1).map((delivery: { id: string }) => delivery.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect([...new Set(ids)].sort()).toEqual(['j0', 'j1', 'j2', 'j3', 'j4', 'j5']);
      const given = lines.filter((line) => line.msg === 'released, not pushed').length;
      expect(await stats(server)).toMatchObject({ active: 6, ready: 0, unworked: given });
    },
  );

  it('answers subscribe before its first push, even on an engine that reserves at once', async () => {
    for (const url of ['memory:', 'sqlite::memory:']) {
      const server = await serve({ url });
      const client = await connect(server);
      await batch(client, 1, [publish(['a', 'b'])]);
      client.send({ type: 'subscribe', id: 2, queue: 'jobs', prefetch: 2 });
      await client.next(() => client.pushed(2).length >= 2);
      const subscribed = client.frames.findIndex((frame) => frame.type === 'subscribed');
      const pushed = client.frames.findIndex((frame) => frame.type === 'deliveries');
      expect(subscribed).toBeGreaterThan(0);
      expect(pushed).toBeGreaterThan(subscribed);
    }
  });

  it('reserves the next deliveries with the acks that give the credit back, pushed after their answer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-refill-'));
    try {
      const server = await serve({ url: `sqlite:${join(dir, 'q.db')}` });
      const client = await connect(server);
      await batch(client, 1, [publish(['a', 'b', 'c', 'd', 'e'])]);
      await client.request({ type: 'subscribe', id: 2, queue: 'jobs', prefetch: 2 });
      await client.next(() => client.pushed(2).length >= 2);
      // Every queue call the server makes, with the turn of the event loop it was made in.
      const queue = await server.broker.queue('jobs');
      const prototype = Object.getPrototypeOf(queue) as { execute: Queue['execute'] };
      const calls: { turn: number; types: string[] }[] = [];
      let turn = 0;
      let ticking = true;
      const tick = () => {
        turn += 1;
        if (ticking) setImmediate(tick);
      };
      setImmediate(tick);
      await settle(5);
      const original = prototype.execute;
      prototype.execute = function (this: Queue, operations) {
        calls.push({ turn, types: operations.map((operation) => operation.type) });
        return original.call(this, operations);
      };
      try {
        const [first, second] = client.pushed(2);
        await batch(client, 3, [{ type: 'ack', receipts: [first.receipt, second.receipt] }]);
        await client.next(() => client.pushed(2).length >= 4);
      } finally {
        prototype.execute = original;
        ticking = false;
      }
      // The reserve was handed to the queue in the turn of the acks: one storage unit.
      const ack = calls.findIndex((each) => each.types.includes('ack'));
      expect(calls[ack + 1]).toEqual({ turn: calls[ack]?.turn, types: ['reserve'] });
      // The client hears of its acks first, then gets the next two, never over its prefetch.
      const answered = client.frames.findIndex((frame) => frame.id === 3);
      const next = client.frames.findIndex(
        (frame) => frame.type === 'deliveries' && frame.deliveries[0].id === 'c',
      );
      expect(answered).toBeGreaterThan(0);
      expect(next).toBeGreaterThan(answered);
      await settle(100);
      expect(client.pushed(2).map((d: { id: string }) => d.id)).toEqual(['a', 'b', 'c', 'd']);
      expect(await stats(server)).toMatchObject({ ready: 1, active: 2, acks: 2 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives credit back when a pushed lease ends unsettled', async () => {
    const clock = new ManualClock(0);
    const server = await serve({ clock });
    const client = await connect(server);
    await client.request({
      type: 'batch',
      id: 1,
      queue: 'jobs',
      operations: [publish(['a', 'b'])],
    });
    await client.request({ type: 'subscribe', id: 2, queue: 'jobs', prefetch: 1, visibility: 100 });
    await client.next(() => client.pushed(2).length >= 1);
    clock.set(100);
    // Both the expired job and the other are ready now; one is pushed within the re-check.
    await client.next(() => client.pushed(2).length >= 2, 4000);
    expect(client.pushed(2)).toHaveLength(2);
  });

  it('checks rights at subscribe and per operation, with the same keys as HTTP', async () => {
    const server = await serve({ keys: KEYS });
    const upgrade = await new Promise<number>((resolve) => {
      const socket = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/stream`);
      socket.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      socket.on('error', () => {});
    });
    expect(upgrade).toBe(401);
    const producer = await connect(server, PRODUCER);
    expect(
      await producer.request({ type: 'subscribe', id: 1, queue: 'jobs', prefetch: 1 }),
    ).toMatchObject({
      type: 'error',
      id: 1,
      error: { code: 'FORBIDDEN' },
    });
    const answer = await producer.request({
      type: 'batch',
      id: 2,
      queue: 'jobs',
      operations: [publish(['a']), { type: 'reserve' }, { type: 'purgeQueue' }],
    });
    expect(
      answer.results.map((r: { ok: boolean; error?: { code: string } }) => r.error?.code ?? 'ok'),
    ).toEqual(['ok', 'FORBIDDEN', 'FORBIDDEN']);
    const consumer = await connect(server, CONSUMER);
    await consumer.request({ type: 'subscribe', id: 1, queue: 'jobs', prefetch: 5 });
    await consumer.next(() => consumer.pushed(1).length >= 1);
    expect(await stats(server, ADMIN)).toMatchObject({ ready: 0, active: 1 });
  });

  it('refuses a WebSocket from a web page of another origin, and takes one from its own pages', async () => {
    const server = await serve();
    await server.broker.queue('jobs');
    const url = `${server.baseUrl.replace('http', 'ws')}/v1/stream`;
    const upgrade = (origin: string) =>
      new Promise<{ status: number; body: string }>((resolve) => {
        const socket = new WebSocket(url, { headers: { origin } });
        socket.on('open', () => {
          socket.close();
          resolve({ status: 101, body: '' });
        });
        socket.on('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        socket.on('error', () => {});
      });
    for (const origin of ['https://evil.example', 'null', `http://localhost:1`]) {
      const refused = await upgrade(origin);
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body).error).toMatchObject({ code: 'FORBIDDEN' });
      expect(JSON.parse(refused.body).error.message).toContain(JSON.stringify(origin));
    }
    expect((await upgrade(server.baseUrl)).status).toBe(101);
    // No job was touched by the refused ones, and a client without an Origin connects.
    const client = await connect(server);
    const answer = await client.request({
      type: 'batch',
      id: 1,
      queue: 'jobs',
      operations: [{ type: 'stats' }],
    });
    expect(answer.results[0]).toMatchObject({ ok: true, value: { ready: 0 } });
  });

  it('reports a subscription that fails at once as ended only after its subscribed answer', async () => {
    const client = await connect(await serve());
    const [session] = await batch(client, 1, [{ type: 'openSession' }]);
    await client.request({
      type: 'batch',
      id: 2,
      queue: 'jobs',
      operations: [{ type: 'closeSession', session: session.value }],
    });
    // A frame still being answered ahead of it, then a subscription whose first receive fails
    // (its session is closed), several times over.
    for (let round = 0; round < 5; round++) {
      const id = 10 + round * 2;
      client.send({
        type: 'batch',
        id,
        queue: 'jobs',
        operations: [publish(Array.from({ length: 50 }, (_, k) => `r${round}-${k}`))],
      });
      client.send({
        type: 'subscribe',
        id: id + 1,
        queue: 'jobs',
        prefetch: 1,
        session: session.value,
      });
      await client.next((frame) => frame.type === 'unsubscribed' && frame.subscription === id + 1);
      const order = client.frames
        .filter((frame) => frame.id === id + 1 || frame.subscription === id + 1)
        .map((frame) => frame.type);
      expect(order).toEqual(['subscribed', 'unsubscribed']);
      expect(
        client.frames.find(
          (frame) => frame.type === 'unsubscribed' && frame.subscription === id + 1,
        ).error,
      ).toMatchObject({ code: 'SESSION_CLOSED' });
    }
  });

  it('limits the prefetch and the subscriptions of one connection', async () => {
    const client = await connect(await serve({ limits: { maxPrefetch: 5, maxSubscriptions: 2 } }));
    expect(
      await client.request({ type: 'subscribe', id: 1, queue: 'jobs', prefetch: 6 }),
    ).toMatchObject({
      type: 'error',
      error: { code: 'INVALID_ARGUMENT' },
    });
    await client.request({ type: 'subscribe', id: 2, queue: 'jobs', prefetch: 5 });
    await client.request({ type: 'subscribe', id: 3, queue: 'jobs', prefetch: 5 });
    expect(
      await client.request({ type: 'subscribe', id: 4, queue: 'jobs', prefetch: 1 }),
    ).toMatchObject({
      type: 'error',
      error: { code: 'TOO_MANY_REQUESTS' },
    });
    expect(
      await client.request({ type: 'credit', id: 5, subscription: 2, prefetch: 50 }),
    ).toMatchObject({
      type: 'error',
      error: { code: 'INVALID_ARGUMENT' },
    });
    expect(await client.request({ type: 'unsubscribe', id: 6, subscription: 99 })).toMatchObject({
      type: 'error',
      error: { code: 'INVALID_ARGUMENT', message: 'no subscription 99' },
    });
  });
});

describe('the stream: subscribes sent in one burst', () => {
  it('are held to the subscription limit and to one subscription per id, though they all wait on the same lookup', async () => {
    const client = await connect(await serve({ limits: { maxSubscriptions: 2 } }));
    const ids = [10, 10, 11, 12, 13, 14];
    for (const id of ids) client.send({ type: 'subscribe', id, queue: 'jobs', prefetch: 1 });
    const answered = () =>
      client.frames.filter((frame) => frame.type === 'subscribed' || frame.type === 'error');
    await client.next(() => answered().length === ids.length);
    const subscribed = answered().filter((frame) => frame.type === 'subscribed');
    expect(subscribed.map((frame) => frame.id)).toEqual([10, 11]);
    expect(answered().filter((frame) => frame.type === 'error')).toEqual([
      expect.objectContaining({
        id: 10,
        error: expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      }),
      ...[12, 13, 14].map((id) =>
        expect.objectContaining({
          id,
          error: expect.objectContaining({ code: 'TOO_MANY_REQUESTS' }),
        }),
      ),
    ]);
    // Both end when asked: no subscription is left that nothing names.
    for (const [index, subscription] of [10, 11].entries()) {
      expect(
        await client.request({ type: 'unsubscribe', id: 20 + index, subscription }),
      ).toMatchObject({ type: 'unsubscribed', subscription });
    }
    expect(
      await client.request({ type: 'subscribe', id: 30, queue: 'jobs', prefetch: 1 }),
    ).toMatchObject({
      type: 'subscribed',
    });
  });
});

describe('the stream: frames sent right behind their subscribe', () => {
  it('a credit and an unsubscribe run after the subscribe they name, in order: nothing pushed after', async () => {
    const server = await serve();
    const client = await connect(server);
    for (let round = 0; round < 10; round++) {
      const id = 100 + round * 3;
      client.send({ type: 'subscribe', id, queue: 'jobs', prefetch: 1 });
      client.send({ type: 'credit', id: id + 1, subscription: id, prefetch: 2 });
      client.send({ type: 'unsubscribe', id: id + 2, subscription: id });
      const ended = await client.next((frame) => frame.id === id + 2);
      expect(ended).toMatchObject({ type: 'unsubscribed', subscription: id });
      expect(client.frames.find((frame) => frame.id === id + 1)).toMatchObject({
        type: 'subscribed',
        subscription: id,
        prefetch: 2,
      });
      expect(client.frames.filter((frame) => frame.type === 'error')).toEqual([]);
    }
    // No subscription is left: a job published now stays ready.
    await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs', { body: { id: 'after' } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(client.frames.filter((frame) => frame.type === 'deliveries')).toEqual([]);
    expect((await (await server.broker.queue('jobs')).stats()).ready).toBe(1);
  });
});

describe('the stream: a deleted queue', () => {
  it('ends its subscriptions at once, even one whose credit is in use: none goes on to a new queue of its name', async () => {
    const server = await serve();
    const client = await connect(server);
    await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs', { body: { id: 'old' } });
    expect(
      await client.request({
        type: 'subscribe',
        id: 1,
        queue: 'jobs',
        prefetch: 1,
        visibility: 200,
      }),
    ).toMatchObject({ type: 'subscribed' });
    await client.next((frame) => frame.type === 'deliveries');
    expect((await call(server.baseUrl, 'DELETE', '/v1/queues/jobs')).body).toEqual({
      deleted: true,
    });
    expect(
      await client.next((frame) => frame.type === 'unsubscribed' && frame.subscription === 1),
    ).toMatchObject({ error: { code: 'NOT_FOUND', message: 'queue jobs was deleted' } });
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: { visibility: 1000 } });
    await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs', { body: { id: 'new' } });
    // Past the old delivery's lease: its credit would have come back.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(client.pushed(1).map((delivery: { id: string }) => delivery.id)).toEqual(['old']);
    expect((await (await server.broker.queue('jobs')).inspect()).ready).toEqual(['new']);
  });
});

describe('the stream: a session or a lease changed elsewhere', () => {
  it('ends a subscription whose credit is in use once its session is closed over HTTP or times out', async () => {
    // The lease outlasts the test: only the session's end can give the credit back.
    const server = await serve({ limits: { streamHeartbeatMs: 200 } });
    const client = await connect(server);
    await batch(client, 1, [publish(['a', 'b', 'c'])]);
    const subscribe = async (id: number, session: string) => {
      await client.request({
        type: 'subscribe',
        id,
        queue: 'jobs',
        prefetch: 1,
        visibility: 60_000,
        session,
      });
      await client.next(() => client.pushed(id).length === 1);
    };
    const ended = (id: number) =>
      client.next((frame) => frame.type === 'unsubscribed' && frame.subscription === id, 3000);
    const closedOne = (await call(server.baseUrl, 'POST', '/v1/queues/jobs/sessions', { body: {} }))
      .body.session;
    await subscribe(2, closedOne);
    await call(server.baseUrl, 'POST', '/v1/queues/jobs/sessions/close', {
      body: { session: closedOne },
    });
    expect(await ended(2)).toMatchObject({ error: { code: 'SESSION_CLOSED' } });
    // Nothing else runs on the queue: the session ends at its timeout only if someone looks.
    const timedOut = (
      await call(server.baseUrl, 'POST', '/v1/queues/jobs/sessions', { body: { timeout: 300 } })
    ).body.session;
    await subscribe(3, timedOut);
    expect(await ended(3)).toMatchObject({ error: { code: 'SESSION_CLOSED' } });
    expect(await stats(server)).toMatchObject({ active: 0, sessions: 0 });
  });

  it('ends a subscription whose credit is in use once its session is closed over HTTP, its pushed delivery acked over HTTP first (R16)', async () => {
    // The queue's time stands still: the lease never ends, so only the look for the session's
    // end can give the credit back.
    const clock = new ManualClock(0);
    const server = await serve({ clock, limits: { streamHeartbeatMs: 200 } });
    const client = await connect(server);
    await batch(client, 1, [publish(['a', 'b'])]);
    const session = (await call(server.baseUrl, 'POST', '/v1/queues/jobs/sessions', { body: {} }))
      .body.session;
    await client.request({
      type: 'subscribe',
      id: 2,
      queue: 'jobs',
      prefetch: 1,
      visibility: 60_000,
      session,
    });
    await client.next(() => client.pushed(2).length === 1);
    const [a] = client.pushed(2);
    const acked = await call(server.baseUrl, 'POST', '/v1/queues/jobs/ack', {
      body: { receipt: a.receipt },
    });
    expect(acked.body).toEqual({ acked: true });
    await call(server.baseUrl, 'POST', '/v1/queues/jobs/sessions/close', { body: { session } });
    expect(
      await client.next((frame) => frame.type === 'unsubscribed' && frame.subscription === 2),
    ).toMatchObject({ error: { code: 'SESSION_CLOSED' } });
    expect(client.pushed(2)).toHaveLength(1);
    expect(await stats(server)).toMatchObject({ ready: 1, active: 0, sessions: 0 });
  });

  it('ends at once a subscription in a session that another connection opened and ended', async () => {
    const server = await serve();
    const opener = await connect(server);
    const [session] = await batch(opener, 1, [{ type: 'openSession' }, publish(['a', 'b'])]);
    const client = await connect(server);
    await client.request({
      type: 'subscribe',
      id: 1,
      queue: 'jobs',
      prefetch: 1,
      visibility: 60_000,
      session: session.value,
    });
    await client.next(() => client.pushed(1).length === 1);
    await opener.close();
    expect(
      await client.next((frame) => frame.type === 'unsubscribed' && frame.subscription === 1, 1000),
    ).toMatchObject({ error: { code: 'SESSION_CLOSED' } });
    expect(client.pushed(1)).toHaveLength(1);
  });

  it('keeps counting a pushed delivery extended elsewhere until its new deadline', async () => {
    const clock = new ManualClock(0);
    const server = await serve({ clock });
    const client = await connect(server);
    await batch(client, 1, [publish(['a', 'b'])]);
    await client.request({ type: 'subscribe', id: 2, queue: 'jobs', prefetch: 1, visibility: 100 });
    await client.next(() => client.pushed(2).length === 1);
    const [a] = client.pushed(2);
    const extended = await call(server.baseUrl, 'POST', '/v1/queues/jobs/extend', {
      body: { receipt: a.receipt, visibility: 10_000 },
    });
    expect(extended.body).toEqual({ deadline: 10_000 });
    clock.set(150);
    // Past the deadline it was pushed with, and past the re-check of leases (1 s).
    await settle(1500);
    expect(client.pushed(2)).toHaveLength(1);
    // Its new deadline: the credit comes back.
    clock.set(10_000);
    await client.next(() => client.pushed(2).length === 2, 4000);
  });
});

describe('the stream: the lease model when a connection ends (R12)', () => {
  it('keeps plain deliveries leased until their deadline and releases those of its sessions at once', async () => {
    const clock = new ManualClock(0);
    const server = await serve({ clock });
    const client = await connect(server);
    await client.request({
      type: 'batch',
      id: 1,
      queue: 'jobs',
      operations: [publish(['a', 'b', 'c'])],
    });
    const [session] = await batch(client, 2, [{ type: 'openSession' }]);
    await client.request({ type: 'subscribe', id: 3, queue: 'jobs', prefetch: 1 });
    await client.request({
      type: 'subscribe',
      id: 4,
      queue: 'jobs',
      prefetch: 1,
      session: session.value,
    });
    await client.next(() => client.pushed(3).length === 1 && client.pushed(4).length === 1);
    expect(await stats(server)).toMatchObject({ active: 2, sessions: 1 });
    await client.close();
    await settle(200);
    // The session's delivery is back at once; the other stays leased until its deadline.
    expect(await stats(server)).toMatchObject({ active: 1, ready: 2, sessions: 0 });
    clock.set(1000);
    expect(await stats(server)).toMatchObject({ active: 0, ready: 3 });
  });

  it('closes the sessions of its connections when the server shuts down, releasing their deliveries at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-stream-shutdown-'));
    try {
      const url = `sqlite:${join(dir, 'leaseq.db')}`;
      const server = await serve({ url });
      const client = await connect(server);
      await batch(client, 1, [publish(['a', 'b', 'c'])]);
      const [session] = await batch(client, 2, [{ type: 'openSession' }]);
      await batch(client, 3, [
        { type: 'reserve', max: 2, session: session.value, visibility: 600_000 },
      ]);
      expect(await stats(server)).toMatchObject({ active: 2, sessions: 1 });
      await server.close();
      expect(await client.closed).toBe(1001);
      const again = await serve({ url });
      expect(await stats(again)).toMatchObject({ active: 0, ready: 3, sessions: 0 });
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a reconnecting client settles its own delivery by receipt, and a stale one answers false', async () => {
    const clock = new ManualClock(0);
    const server = await serve({ clock });
    const first = await connect(server);
    await first.request({ type: 'batch', id: 1, queue: 'jobs', operations: [publish(['a', 'b'])] });
    const [reserved] = await batch(first, 2, [{ type: 'reserve', max: 2 }]);
    const [a, b] = reserved.value;
    await first.close();
    clock.set(1000);
    const second = await connect(server);
    const [again] = await batch(second, 1, [{ type: 'reserve', max: 1 }]);
    expect(again.value[0]).toMatchObject({ id: 'a', deliveryCount: 2 });
    // a's old receipt names the old delivery: it cannot complete the new one (R8).
    const answer = await second.request({
      type: 'batch',
      id: 2,
      queue: 'jobs',
      operations: [{ type: 'ack', receipts: [a.receipt, b.receipt, again.value[0].receipt] }],
    });
    expect(answer.results).toEqual([{ ok: true, value: [false, false, true] }]);
  });
});

describe('the stream is bounded', () => {
  it('answers a flood of frames in order without running more than a bounded number at once', async () => {
    const server = await serve();
    const client = await connect(server);
    const count = 2000;
    for (let id = 1; id <= count; id++) {
      client.send({ type: 'batch', id, queue: 'jobs', operations: [publish([`j${id}`])] });
    }
    await client.next((frame) => frame.id === count, 30_000);
    const ids = client.frames.filter((frame) => frame.type === 'results').map((frame) => frame.id);
    expect(ids).toEqual(Array.from({ length: count }, (_, index) => index + 1));
    expect(await stats(server)).toMatchObject({ ready: count });
  });

  it('stops pushing to a consumer that never reads and closes it with a typed reason', async () => {
    const { lines, logger } = captureLogs('warn');
    const server = await serve({
      logger,
      limits: {
        maxStreamBufferBytes: 64 * 1024,
        // Long enough for the pushes to fill both ends' socket buffers before a heartbeat could
        // end the connection (until they are full, the server cannot tell that nobody reads).
        streamHeartbeatMs: 1500,
        maxPayloadBytes: 1024 * 1024,
        maxBodyBytes: 2 * 1024 * 1024,
      },
    });
    const client = await FrameClient.open(server.baseUrl);
    // More than the socket buffers of both ends can hold (the kernel's autotuning maxima).
    const big = 'x'.repeat(1_000_000);
    const jobs = Math.ceil(socketBufferBytes() / 1_000_000) + 20;
    for (let i = 0; i < jobs; i += 10) {
      await Promise.all(
        Array.from({ length: Math.min(10, jobs - i) }, () =>
          call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs', { body: { payload: big } }),
        ),
      );
    }
    // The client stops reading its socket, then asks for everything.
    client.send({ type: 'subscribe', id: 1, queue: 'jobs', prefetch: 1000 });
    (client.socket as unknown as { _socket: { pause(): void } })._socket.pause();
    const closed = () => lines.some((line) => line.msg.startsWith('stream closed: '));
    const started = Date.now();
    // Filling the kernel's buffers first takes a while on a loaded machine.
    while (!closed() && Date.now() - started < 20_000) await settle(50);
    client.socket.terminate();
    // Not a heartbeat timeout: the server, not reading while backed up, hears no pong either.
    expect(lines.map((line) => line.msg)).toEqual([
      'stream closed: the client did not read what was sent to it',
    ]);
    // The metrics name why the server ended it, as the log does. The log line comes when the
    // server decides; the count, once the connection has ended (its socket closed).
    const counted = 'leaseq_stream_connections_closed_total{reason="slow-consumer"} 1';
    let metrics = '';
    for (const until = Date.now() + 5_000; !metrics.includes(counted) && Date.now() < until; ) {
      metrics = (await call<string>(server.baseUrl, 'GET', '/metrics')).body;
      if (!metrics.includes(counted)) await settle(50);
    }
    expect(metrics).toContain(counted);
    // Pushing stopped at the buffer bound: the rest stayed ready, nothing was lost.
    const after = await stats(server);
    expect(after.ready + after.active).toBe(jobs);
    expect(after.ready).toBeGreaterThan(0);
  });

  it('closes a consumer that does not drain with 4008, which it reads once it reads again', async () => {
    const { lines, logger } = captureLogs('warn');
    const server = await serve({
      logger,
      limits: {
        maxStreamBufferBytes: 64 * 1024,
        streamHeartbeatMs: 1000,
        maxPayloadBytes: 1024 * 1024,
        maxBodyBytes: 2 * 1024 * 1024,
      },
    });
    const big = 'x'.repeat(1_000_000);
    const jobs = Math.ceil(socketBufferBytes() / 1_000_000) + 20;
    const queue = await server.broker.queue('jobs');
    for (let i = 0; i < jobs; i += 10) {
      await queue.publishBatch(
        Array.from({ length: Math.min(10, jobs - i) }, () => ({ payload: big })),
      );
    }
    // A bare socket, which parses nothing: once it reads again it drains at once.
    const socket = new WebSocket(`${server.baseUrl.replace(/^http/, 'ws')}/v1/stream`);
    open.push({ close: async () => socket.terminate() });
    const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
    await new Promise((resolve) => socket.once('message', resolve));
    socket.send(JSON.stringify({ type: 'subscribe', id: 1, queue: 'jobs', prefetch: 1000 }));
    const raw = (socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    raw.pause();
    const decided = () => lines.some((line) => line.msg.startsWith('stream closed: '));
    for (const until = Date.now() + 10_000; !decided() && Date.now() < until; ) await settle(20);
    expect(lines.map((line) => line.msg)).toEqual([
      'stream closed: the client did not read what was sent to it',
    ]);
    raw.resume();
    // The close frame went out behind what was queued, not cut off with it.
    expect(await closed).toBe(4008);
  });

  it('answers a batch frame with deliveries that fit the buffer bound, giving the rest back unworked', async () => {
    const bound = 64 * 1024;
    const server = await serve({ limits: { maxStreamBufferBytes: bound } });
    const payload = 'x'.repeat(8 * 1024);
    const queue = await server.broker.queue('jobs');
    for (let i = 0; i < 1000; i += 100) {
      await queue.publishBatch(
        Array.from({ length: 100 }, (_, k) => ({ id: `j${i + k}`, payload })),
      );
    }
    const client = await connect(server);
    // Small frames that ask for far more than the bound: 4 × 10 reserves of 100.
    const asks = Array.from({ length: 10 }, () => ({
      type: 'reserve',
      max: 100,
      visibility: 60_000,
    }));
    for (let id = 1; id <= 4; id++)
      client.send({ type: 'batch', id, queue: 'jobs', operations: asks });
    const answers = await Promise.all(
      [1, 2, 3, 4].map((id) => client.next((frame) => frame.id === id, 10_000)),
    );
    const taken: { id: string }[] = [];
    for (const answer of answers) {
      expect(answer.type).toBe('results');
      // The bound, and at most one delivery past it.
      expect(JSON.stringify(answer).length).toBeLessThanOrEqual(bound + 9 * 1024);
      for (const result of answer.results) taken.push(...result.value);
    }
    expect(taken.length).toBeGreaterThan(0);
    expect(new Set(taken.map((delivery) => delivery.id)).size).toBe(taken.length);
    // What did not fit went back to ready, unworked (R33): nothing lost, nothing held.
    const after = await stats(server);
    expect(after).toMatchObject({ active: taken.length, ready: 1000 - taken.length });
    expect(after.unworked).toBeGreaterThan(0);
    // Auto-acked deliveries are gone from the queue once taken (R22): never held back.
    const [auto] = await batch(client, 5, [{ type: 'reserve', max: 20, ack: 'auto' }]);
    expect(auto.value).toHaveLength(20);
    expect(await stats(server)).toMatchObject({ ready: 980 - taken.length, autoAcked: 20 });
  });
});
