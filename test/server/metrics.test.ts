import { afterEach, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

let server: TestServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

function api(method: string, path: string, body?: unknown, apiKey?: string) {
  return call((server as TestServer).baseUrl, method, path, {
    ...(body === undefined ? {} : { body }),
    ...(apiKey === undefined ? {} : { apiKey }),
  });
}

describe('/metrics dead-letter series', () => {
  it('R17 distinct free-text reasons make no new series: one per reason kind, the text stays on the job', async () => {
    server = await startTestServer();
    await api('PUT', '/v1/queues/cards', {});
    const count = 60;
    await api('POST', '/v1/queues/cards/jobs/batch', {
      jobs: Array.from({ length: count }, (_, index) => ({ id: `c${index}` })),
    });
    const { deliveries } = (await api('POST', '/v1/queues/cards/receive', { max: count })).body;
    const entries = deliveries.map((delivery: { receipt: string }, index: number) => ({
      receipt: delivery.receipt,
      requeue: false,
      reason: `declined by issuer ${index}`,
    }));
    await api('POST', '/v1/queues/cards/nack/batch', { entries });
    const text = (await api('GET', '/metrics')).body as string;
    const series = text.split('\n').filter((line) => line.startsWith('leaseq_dead_letters_total{'));
    expect(series).toEqual([`leaseq_dead_letters_total{queue="cards",reason="rejected"} ${count}`]);
    expect((await api('GET', '/v1/queues/cards/stats')).body.deadLetters).toEqual({
      rejected: count,
    });
    expect((await api('GET', '/v1/queues/cards/jobs/c9')).body.reason).toBe('declined by issuer 9');
  });
});
