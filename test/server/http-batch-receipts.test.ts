import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

/**
 * A receipt not issued for the queue in a batch: nack/batch and extend/batch answer it as that
 * entry's own error while the other entries go on; ack/batch refuses the whole batch, and its
 * error names the entry.
 */
let server: TestServer;

const api = (method: string, path: string, body?: unknown) =>
  call(server.baseUrl, method, path, body === undefined ? {} : { body });

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server.close();
});

/** Two receipts of `name` and one of another queue. */
async function receipts(name: string) {
  await api('PUT', `/v1/queues/${name}`, {});
  await api('PUT', `/v1/queues/${name}-other`, {});
  await api('POST', `/v1/queues/${name}/jobs/batch`, { jobs: [{ id: 'a' }, { id: 'b' }] });
  await api('POST', `/v1/queues/${name}-other/jobs`, { id: 'x' });
  const [a, b] = (await api('POST', `/v1/queues/${name}/receive`, { max: 2 })).body.deliveries;
  const [other] = (await api('POST', `/v1/queues/${name}-other/receive`, {})).body.deliveries;
  return { a: a.receipt as string, b: b.receipt as string, other: other.receipt as string };
}

const INVALID_RECEIPT = {
  error: {
    code: 'INVALID_RECEIPT',
    message: expect.stringContaining('the receipt was not issued for queue'),
  },
};

describe('batches holding a receipt not issued for the queue', () => {
  it('nack/batch: that entry answers INVALID_RECEIPT, the others are nacked', async () => {
    const { a, b, other } = await receipts('nb');
    const answer = await api('POST', '/v1/queues/nb/nack/batch', {
      entries: [{ receipt: a }, { receipt: other }, { receipt: b, requeue: false }],
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      results: [{ nacked: true }, INVALID_RECEIPT, { nacked: true }],
    });
    const stats = (await api('GET', '/v1/queues/nb/stats')).body;
    expect(stats).toMatchObject({ ready: 1, active: 0, dead: 1 });
    // The other queue's delivery is untouched.
    expect((await api('GET', '/v1/queues/nb-other/stats')).body).toMatchObject({ active: 1 });
  });

  it('extend/batch: that entry answers INVALID_RECEIPT, the others are extended', async () => {
    const { a, b, other } = await receipts('eb');
    const answer = await api('POST', '/v1/queues/eb/extend/batch', {
      entries: [
        { receipt: other, visibility: 60_000 },
        { receipt: a, visibility: 60_000 },
        { receipt: b, visibility: 60_000 },
      ],
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      results: [
        INVALID_RECEIPT,
        { deadline: expect.any(Number) },
        { deadline: expect.any(Number) },
      ],
    });
  });

  it('ack/batch: the whole batch is refused, the error naming the index of the bad receipt', async () => {
    const { a, b, other } = await receipts('ab');
    const answer = await api('POST', '/v1/queues/ab/ack/batch', { receipts: [a, other, b] });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('INVALID_RECEIPT');
    expect(answer.body.error.message).toMatch(
      /^receipts\[1\]: the receipt was not issued for queue ab .*; no receipt of the batch was acked$/,
    );
    // Nothing was acked.
    expect((await api('GET', '/v1/queues/ab/stats')).body).toMatchObject({ active: 2, acks: 0 });
  });
});
