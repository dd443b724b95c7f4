import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { type Answer, call, startTestServer, type TestServer } from './helpers.js';

/**
 * The bad inputs of the security checklist: each is refused with the right status and an
 * `{ error: { code, message } }` body, and changes nothing; the server stays healthy.
 */
let server: TestServer;
let receipt: string;
let otherReceipt: string;
const clock = new ManualClock(5000);

async function snapshot() {
  const queues = await server.broker.listQueues();
  const states = await Promise.all(
    queues.map(async ({ name }) => {
      const queue = await server.broker.queue(name);
      return { name, view: await queue.inspect(), stats: await queue.stats() };
    }),
  );
  return { queues, states };
}

function expectErrorBody(answer: Answer, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(Object.keys(answer.body)).toEqual(['error']);
  expect(Object.keys(answer.body.error).sort()).toEqual(['code', 'message']);
  expect(answer.body.error.code).toBe(code);
  expect(answer.body.error.message).not.toMatch(/\n\s+at |node_modules|\.ts:\d/);
  expect(answer.body.error.message).not.toContain(receipt);
}

beforeAll(async () => {
  server = await startTestServer({ clock, limits: { maxBatch: 10 } });
  for (const name of ['orders', 'other']) {
    await call(server.baseUrl, 'PUT', `/v1/queues/${name}`, { body: {} });
    await call(server.baseUrl, 'POST', `/v1/queues/${name}/jobs/batch`, {
      body: { jobs: [{ id: 'a' }, { id: 'b' }] },
    });
  }
  const answer = await call(server.baseUrl, 'POST', '/v1/queues/orders/receive', { body: {} });
  receipt = answer.body.deliveries[0].receipt;
  const other = await call(server.baseUrl, 'POST', '/v1/queues/other/receive', { body: {} });
  otherReceipt = other.body.deliveries[0].receipt;
});

afterAll(async () => {
  await server.close();
});

interface Case {
  name: string;
  method?: string;
  path: string;
  /** A function when it needs what beforeAll made (the receipts). */
  body?: unknown | (() => unknown);
  raw?: string | Uint8Array | (() => string);
  headers?: Record<string, string>;
  status: number;
  code: string;
  /** Part of the error message, where it must say what was wrong. */
  message?: string;
}

const q = '/v1/queues/orders';
/** `{"id":"` and `"}` around bytes that are no UTF-8. */
const withBytes = (...bytes: number[]) =>
  Buffer.concat([Buffer.from('{"id":"'), Buffer.from(bytes), Buffer.from('"}')]);
const cases = (): Case[] => [
  {
    name: 'an id of bytes that are no UTF-8 (not read as U+FFFD, which would make them one id)',
    path: `${q}/jobs`,
    raw: withBytes(0xff, 0xfe),
    status: 400,
    code: 'INVALID_ARGUMENT',
    message: 'UTF-8',
  },
  {
    name: 'a lone continuation byte in a payload',
    path: `${q}/jobs`,
    raw: Buffer.concat([Buffer.from('{"payload":"a'), Buffer.from([0x80]), Buffer.from('"}')]),
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'unknown field',
    path: `${q}/jobs`,
    body: { id: 'x', colour: 1 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'priority outside 0–9 (R23)',
    path: `${q}/jobs`,
    body: { id: 'x', priority: 10 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'empty group (R24)',
    path: `${q}/jobs`,
    body: { id: 'x', group: '' },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'id of the wrong type',
    path: `${q}/jobs`,
    body: { id: 5 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  { name: 'empty id', path: `${q}/jobs`, body: { id: '' }, status: 400, code: 'INVALID_ARGUMENT' },
  {
    name: 'id of 257 characters',
    path: `${q}/jobs`,
    body: { id: 'x'.repeat(257) },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'negative delay',
    path: `${q}/jobs`,
    body: { delay: -1 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'fractional delay',
    path: `${q}/jobs`,
    body: { delay: 1.5 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'delay as a string',
    path: `${q}/jobs`,
    body: { delay: '5' },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'delay 1e999 (Infinity)',
    path: `${q}/jobs`,
    raw: '{"delay":1e999}',
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'delay 2^53+1',
    path: `${q}/jobs`,
    raw: '{"delay":9007199254740993}',
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'delay over the cap',
    path: `${q}/jobs`,
    body: { delay: 12 * 3600_000 + 1 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'an array body',
    path: `${q}/jobs`,
    body: [{ id: 'x' }],
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'a JSON null body',
    path: `${q}/jobs`,
    raw: 'null',
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  { name: 'an empty JSON body', path: `${q}/jobs`, raw: '', status: 400, code: 'INVALID_ARGUMENT' },
  { name: 'no body at all', path: `${q}/jobs`, status: 400, code: 'INVALID_ARGUMENT' },
  { name: 'bad JSON', path: `${q}/jobs`, raw: '{"id":', status: 400, code: 'INVALID_ARGUMENT' },
  {
    name: 'trailing garbage',
    path: `${q}/jobs`,
    raw: '{"id":"x"} x',
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: '__proto__ key',
    path: `${q}/jobs`,
    raw: '{"payload":{"__proto__":{"admin":true}}}',
    status: 400,
    code: 'INVALID_ARGUMENT',
    message: 'holds a "__proto__" key',
  },
  {
    name: 'constructor.prototype',
    path: `${q}/jobs`,
    raw: '{"payload":{"constructor":{"prototype":{"x":1}}}}',
    status: 400,
    code: 'INVALID_ARGUMENT',
    message: 'holds a "constructor" with "prototype" key',
  },
  // A number JSON.parse would not keep exactly is refused, never stored changed (as null, or
  // with its last digits gone).
  {
    name: 'a payload number beyond the doubles (1e400)',
    path: `${q}/jobs`,
    raw: '{"payload":{"big":1e400}}',
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'a payload integer beyond 2^53',
    path: `${q}/jobs`,
    raw: '{"payload":12345678901234567890}',
    status: 400,
    code: 'INVALID_ARGUMENT',
    message: 'at most 2^53 - 1',
  },
  {
    name: 'a payload integer beyond 2^53 in a batch entry',
    path: `${q}/jobs/batch`,
    raw: '{"jobs":[{"id":"fine"},{"payload":[1,-9007199254740993]}]}',
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'nested 100 deep',
    path: `${q}/jobs`,
    raw: `{"payload":${'['.repeat(100)}${']'.repeat(100)}}`,
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'nested 100000 deep',
    path: `${q}/jobs`,
    raw: `{"payload":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'text/plain',
    path: `${q}/jobs`,
    raw: '{}',
    headers: { 'content-type': 'text/plain' },
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message:
      'request bodies are JSON: send Content-Type: application/json (this request\'s Content-Type: "text/plain")',
  },
  {
    name: 'form encoding',
    path: `${q}/jobs`,
    raw: 'id=x',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message: 'send Content-Type: application/json',
  },
  {
    name: 'a body without a content type',
    path: `${q}/jobs`,
    raw: '{}',
    headers: { 'content-type': '' },
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message: "this request's Content-Type: none",
  },
  {
    name: 'a JSON body in another charset than UTF-8',
    path: `${q}/jobs`,
    raw: '{"id":"latin"}',
    headers: { 'content-type': 'application/json; charset=latin1' },
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message: 'a JSON body is UTF-8 (RFC 8259), not charset=latin1',
  },
  {
    name: 'an unknown query parameter',
    path: `${q}/jobs?foo=1`,
    body: { id: 'queried' },
    status: 400,
    code: 'INVALID_ARGUMENT',
    message: 'querystring has an unknown field "foo"',
  },
  {
    name: 'a query parameter on a route that takes none (GET)',
    method: 'GET',
    path: `${q}/stats?verbose=1`,
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'a gzip body',
    path: `${q}/jobs`,
    raw: '{}',
    headers: { 'content-encoding': 'gzip' },
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: 'a batch over maxBatch',
    path: `${q}/jobs/batch`,
    body: { jobs: Array.from({ length: 11 }, () => ({})) },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'a batch with one bad entry',
    path: `${q}/jobs/batch`,
    body: { jobs: [{ id: 'new' }, { delay: -1 }] },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'visibility 0',
    path: `${q}/receive`,
    body: { visibility: 0 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'visibility 2^53',
    path: `${q}/receive`,
    body: { visibility: 2 ** 53 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  { name: 'max 0', path: `${q}/receive`, body: { max: 0 }, status: 400, code: 'INVALID_ARGUMENT' },
  {
    name: 'max 1000000',
    path: `${q}/receive`,
    body: { max: 1_000_000 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'wait 20001',
    path: `${q}/receive`,
    body: { wait: 20_001 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'wait -1',
    path: `${q}/receive`,
    body: { wait: -1 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'a forged session',
    path: `${q}/receive`,
    body: { session: 's1' },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  { name: 'missing receipt', path: `${q}/ack`, body: {}, status: 400, code: 'INVALID_ARGUMENT' },
  {
    name: 'empty receipt',
    path: `${q}/ack`,
    body: { receipt: '' },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'receipt of 10 KB',
    path: `${q}/ack`,
    body: { receipt: 'A'.repeat(10_240) },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'receipt not base64url',
    path: `${q}/ack`,
    body: { receipt: 'a+b/c=' },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'a one-byte receipt',
    path: `${q}/ack`,
    body: { receipt: 'A' },
    status: 400,
    code: 'INVALID_RECEIPT',
  },
  {
    name: 'random bytes',
    path: `${q}/ack`,
    body: { receipt: Buffer.alloc(48, 7).toString('base64url') },
    status: 400,
    code: 'INVALID_RECEIPT',
  },
  {
    name: 'another queue receipt',
    path: `${q}/ack`,
    body: () => ({ receipt: otherReceipt }),
    status: 400,
    code: 'INVALID_RECEIPT',
  },
  {
    name: 'duplicate keys, the last forged',
    path: `${q}/ack`,
    raw: () => `{"receipt":"${receipt}","receipt":"AAAA"}`,
    status: 400,
    code: 'INVALID_RECEIPT',
  },
  {
    name: 'a token instead of a receipt',
    path: `${q}/ack`,
    body: { token: 1 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'nack reason of 1025 characters',
    path: `${q}/nack`,
    body: () => ({ receipt, requeue: false, reason: 'r'.repeat(1025) }),
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'extend without visibility',
    path: `${q}/extend`,
    body: () => ({ receipt }),
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'extend to -1',
    path: `${q}/extend`,
    body: () => ({ receipt, visibility: -1 }),
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'redrive ids not an array',
    path: `${q}/dead-letters/redrive`,
    body: { ids: 'a' },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'session prefetch 0',
    path: `${q}/sessions`,
    body: { prefetch: 0 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'queue option maxDeliveries 0',
    method: 'PATCH',
    path: q,
    body: { maxDeliveries: 0 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'queue option unknown',
    method: 'PUT',
    path: '/v1/queues/new',
    body: { messageTtl: 5 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'queue option retention 0',
    method: 'PATCH',
    path: q,
    body: { retention: 0 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'queue option retention 1.5',
    method: 'PUT',
    path: '/v1/queues/new',
    body: { retention: 1.5 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'queue option maxLength 0',
    method: 'PATCH',
    path: q,
    body: { maxLength: 0 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'queue option overflow "drop"',
    method: 'PATCH',
    path: q,
    body: { maxLength: 5, overflow: 'drop' },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'a publish with expiresAt 1.5',
    path: `${q}/jobs`,
    body: { id: 'new', expiresAt: 1.5 },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'a publish with expiresAt -1',
    path: `${q}/jobs/batch`,
    body: { jobs: [{ id: 'new' }, { id: 'other', expiresAt: -1 }] },
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'queue name of 81 characters',
    method: 'PUT',
    path: `/v1/queues/${'x'.repeat(81)}`,
    body: {},
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'queue name with a space',
    method: 'PUT',
    path: '/v1/queues/a%20b',
    body: {},
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'queue name ../x',
    method: 'PUT',
    path: '/v1/queues/..%2Fx',
    body: {},
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'queue name with SQL',
    method: 'PUT',
    path: `/v1/queues/${encodeURIComponent("x'; DROP TABLE jobs;--")}`,
    body: {},
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'queue name with CRLF',
    method: 'PUT',
    path: '/v1/queues/a%0D%0Ab',
    body: {},
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  {
    name: 'a Cyrillic lookalike name',
    method: 'PUT',
    path: `/v1/queues/${encodeURIComponent('оrders')}`,
    body: {},
    status: 400,
    code: 'INVALID_ARGUMENT',
  },
  { name: 'an unknown route', method: 'GET', path: '/v2/queues', status: 404, code: 'NOT_FOUND' },
  {
    name: 'a method the route lacks',
    method: 'DELETE',
    path: `${q}/jobs`,
    status: 404,
    code: 'NOT_FOUND',
  },
];

describe('bad inputs are refused with a typed error and change nothing', () => {
  it.each(cases().map((c) => [c.name, c] as const))('%s', async (_name, bad) => {
    const before = await snapshot();
    const body = typeof bad.body === 'function' ? bad.body() : bad.body;
    const raw = typeof bad.raw === 'function' ? bad.raw() : bad.raw;
    const answer = await call(server.baseUrl, bad.method ?? 'POST', bad.path, {
      ...(body === undefined ? {} : { body }),
      ...(raw === undefined ? {} : { raw }),
      ...(bad.headers === undefined ? {} : { headers: bad.headers }),
    });
    expectErrorBody(answer, bad.status, bad.code);
    if (bad.message !== undefined) expect(answer.body.error.message).toContain(bad.message);
    expect(await snapshot()).toEqual(before);
  });

  it('takes well-formed UTF-8 of every width as sent', async () => {
    const id = 'ü✓😀';
    const answer = await call(server.baseUrl, 'POST', `${q}/jobs`, {
      raw: Buffer.from(JSON.stringify({ id, payload: { text: id } })),
    });
    expect(answer.status).toBe(200);
    expect((await (await server.broker.queue('orders')).job(id))?.payload).toEqual({ text: id });
    await (await server.broker.queue('orders')).purge([id]);
  });

  it('takes a UTF-8 charset however spelt, and probes with a query string of their own', async () => {
    for (const type of ['application/json; charset=UTF-8', 'application/json;charset="utf8"']) {
      const answer = await call(server.baseUrl, 'POST', `${q}/jobs`, {
        raw: '{"id":"charset"}',
        headers: { 'content-type': type },
      });
      expect(answer.status, type).toBe(200);
    }
    await (await server.broker.queue('orders')).purge(['charset']);
    expect((await call(server.baseUrl, 'GET', '/healthz?probe=lb')).status).toBe(200);
  });

  it('stays healthy afterwards: publish, receive and ack still work', async () => {
    expect((await call(server.baseUrl, 'GET', '/healthz')).body).toEqual({ status: 'ok' });
    await call(server.baseUrl, 'POST', `${q}/jobs`, { body: { id: 'after' } });
    const [delivery] = (await call(server.baseUrl, 'POST', `${q}/receive`, { body: { max: 5 } }))
      .body.deliveries;
    expect(delivery.id).toBe('b');
    const acked = await call(server.baseUrl, 'POST', `${q}/ack`, {
      body: { receipt: delivery.receipt },
    });
    expect(acked.body).toEqual({ acked: true });
  });
});

describe('fuzzing the write routes', () => {
  const routes = [
    'jobs',
    'jobs/batch',
    'receive',
    'ack',
    'ack/batch',
    'nack',
    'extend',
    'sessions',
  ];

  it('never answers 5xx, and a refused request changes nothing', async () => {
    const value = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc.integer(),
      fc.double(),
      fc.string(),
      fc.constant(receipt),
    );
    const body = fc.oneof(
      fc.dictionary(
        fc.constantFrom(
          'id',
          'payload',
          'delay',
          'max',
          'visibility',
          'wait',
          'receipt',
          'receipts',
          'jobs',
          'entries',
          'requeue',
          'session',
          'x',
        ),
        value,
        { maxKeys: 4 },
      ),
      fc.jsonValue({ maxDepth: 2 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), body, async (route, sent) => {
        const before = await snapshot();
        const answer = await call(server.baseUrl, 'POST', `${q}/${route}`, {
          raw: JSON.stringify(sent) ?? '',
        });
        expect(answer.status).toBeLessThan(500);
        if (answer.status >= 400) {
          expect(answer.body.error.code).toEqual(expect.any(String));
          expect(await snapshot()).toEqual(before);
        }
      }),
      { numRuns: 150, seed: 7 },
    );
  });
});
