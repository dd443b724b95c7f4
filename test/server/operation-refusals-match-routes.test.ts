import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

/**
 * The same bad input gets the same refusal through the operations route as through the single
 * route of that operation: a receipt that is no receipt at all (empty, not base64url, too long)
 * is INVALID_ARGUMENT at both, and a bad field beside a forged receipt is refused for the field,
 * as the single route's schema refuses it before the receipt is read.
 */
let server: TestServer;
let forged: string;

const api = (method: string, path: string, body?: unknown) =>
  call(server.baseUrl, method, path, body === undefined ? {} : { body });

beforeAll(async () => {
  server = await startTestServer();
  await api('PUT', '/v1/queues/same', { visibility: 60_000 });
  await api('PUT', '/v1/queues/same-other', {});
  await api('POST', '/v1/queues/same-other/jobs', { id: 'x' });
  // Genuine, but of another queue: well formed, and not issued for `same`.
  forged = (await api('POST', '/v1/queues/same-other/receive', {})).body.deliveries[0].receipt;
});

afterAll(async () => {
  await server.close();
});

/** The single route, its body, and the same call as an operation. */
type Case = [name: string, route: string, body: () => Record<string, unknown>, type: string];

const CASES: Case[] = [
  ['ack of an empty receipt', 'ack', () => ({ receipt: '' }), 'INVALID_ARGUMENT'],
  ['ack of a receipt not base64url', 'ack', () => ({ receipt: 'a+b/c=' }), 'INVALID_ARGUMENT'],
  [
    'ack of a receipt of 2049 characters',
    'ack',
    () => ({ receipt: 'A'.repeat(2049) }),
    'INVALID_ARGUMENT',
  ],
  ['nack of an empty receipt', 'nack', () => ({ receipt: '' }), 'INVALID_ARGUMENT'],
  [
    'extend of a receipt not base64url',
    'extend',
    () => ({ receipt: '!!', visibility: 1000 }),
    'INVALID_ARGUMENT',
  ],
  [
    'nack with delay -1 and a forged receipt',
    'nack',
    () => ({ receipt: forged, delay: -1 }),
    'INVALID_ARGUMENT',
  ],
  [
    'nack with an unknown field and a forged receipt',
    'nack',
    () => ({ receipt: forged, when: 1 }),
    'INVALID_ARGUMENT',
  ],
  [
    'extend with visibility 0 and a forged receipt',
    'extend',
    () => ({ receipt: forged, visibility: 0 }),
    'INVALID_ARGUMENT',
  ],
  [
    'extend beyond maxVisibilityMs with a forged receipt',
    'extend',
    () => ({ receipt: forged, visibility: 43_200_001 }),
    'INVALID_ARGUMENT',
  ],
  [
    'nack with a reason holding U+0000 and a forged receipt',
    'nack',
    () => ({ receipt: forged, requeue: false, reason: 'bad\u0000' }),
    'INVALID_ARGUMENT',
  ],
  [
    'nack with a delay but no requeue and a forged receipt',
    'nack',
    () => ({ receipt: forged, requeue: false, delay: 5 }),
    'INVALID_ARGUMENT',
  ],
  ['ack of a forged receipt', 'ack', () => ({ receipt: forged }), 'INVALID_RECEIPT'],
  [
    'nack of a forged receipt',
    'nack',
    () => ({ receipt: forged, requeue: false }),
    'INVALID_RECEIPT',
  ],
  [
    'extend of a forged receipt',
    'extend',
    () => ({ receipt: forged, visibility: 1000 }),
    'INVALID_RECEIPT',
  ],
];

/** The operation of a single route's body: an ack names its receipts as a list. */
function asOperation(route: string, body: Record<string, unknown>): Record<string, unknown> {
  if (route !== 'ack') return { type: route, ...body };
  const { receipt, ...rest } = body;
  return { type: 'ack', receipts: [receipt], ...rest };
}

describe('the operations route refuses bad input as the single routes do', () => {
  it.each(CASES)('%s', async (_name, route, body, code) => {
    const single = await api('POST', `/v1/queues/same/${route}`, body());
    expect(single.status).toBe(400);
    expect(single.body.error.code).toBe(code);
    const batch = await api('POST', '/v1/queues/same/operations', {
      operations: [asOperation(route, body()), { type: 'stats' }],
    });
    expect(batch.status).toBe(200);
    expect(batch.body.results[0]).toMatchObject({ ok: false, error: { code } });
    expect(batch.body.results[1]).toMatchObject({ ok: true });
  });

  it('answers a nack/batch entry as the nack operation, its options before its receipt', async () => {
    const entries = [
      // 513 emoji: within the schema's 1024 characters, over R18's 1024 UTF-16 code units.
      { receipt: forged, requeue: false, reason: '\u{1F600}'.repeat(513) },
      { receipt: forged, attempted: false, requeue: false },
      { receipt: forged },
    ];
    const single = await api('POST', '/v1/queues/same/nack/batch', { entries });
    const batch = await api('POST', '/v1/queues/same/operations', {
      operations: entries.map((entry) => ({ type: 'nack', ...entry })),
    });
    const codes = ['INVALID_ARGUMENT', 'INVALID_ARGUMENT', 'INVALID_RECEIPT'];
    expect(
      single.body.results.map((result: { error?: { code: string } }) => result.error?.code),
    ).toEqual(codes);
    expect(
      batch.body.results.map((result: { error?: { code: string } }) => result.error?.code),
    ).toEqual(codes);
  });

  it('refuses an ack of more receipts than maxBatch for its count, forged or not', async () => {
    const receipts = Array.from({ length: 101 }, () => forged);
    const single = await api('POST', '/v1/queues/same/ack/batch', { receipts });
    expect(single.body.error.code).toBe('INVALID_ARGUMENT');
    const batch = await api('POST', '/v1/queues/same/operations', {
      operations: [{ type: 'ack', receipts }],
    });
    expect(batch.body.results[0]).toMatchObject({
      ok: false,
      error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('maxBatch') },
    });
  });

  it('still settles a genuine receipt of the queue', async () => {
    await api('POST', '/v1/queues/same/jobs', { id: 'real' });
    const [delivery] = (await api('POST', '/v1/queues/same/receive', {})).body.deliveries;
    const batch = await api('POST', '/v1/queues/same/operations', {
      operations: [{ type: 'ack', receipts: [delivery.receipt] }],
    });
    expect(batch.body.results[0]).toEqual({ ok: true, value: [true] });
  });
});
