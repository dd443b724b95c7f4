import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

/** GET /v1/queues/{name}/dead-letters?payload=false: the page without the payloads. */
describe('GET /v1/queues/{name}/dead-letters?payload=', () => {
  let server: TestServer;
  // biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely
  const api = (method: string, path: string, body?: unknown): Promise<any> =>
    call(`${server.baseUrl}/v1/queues/held`, method, path, body === undefined ? {} : { body });

  beforeAll(async () => {
    server = await startTestServer();
    await api('PUT', '', { maxDeliveries: 1 });
    await api('POST', '/jobs/batch', {
      jobs: [{ id: 'big', payload: { blob: 'x'.repeat(50_000) } }, { id: 'bare' }],
    });
    for (const delivery of (await api('POST', '/receive', { max: 2 })).body.deliveries) {
      await api('POST', '/nack', { receipt: delivery.receipt, requeue: false, reason: 'bad' });
    }
  });

  afterAll(() => server?.close());

  it('answers the same page with or without the payloads, and with them by default', async () => {
    const whole = await api('GET', '/dead-letters');
    expect(whole.status).toBe(200);
    expect(whole.body.deadLetters.map((d: { id: string }) => d.id)).toEqual(['big', 'bare']);
    expect(whole.body.deadLetters[0].payload).toEqual({ blob: 'x'.repeat(50_000) });
    expect((await api('GET', '/dead-letters?payload=true')).body).toEqual(whole.body);
    const summary = await api('GET', '/dead-letters?payload=false&limit=1');
    expect(summary.status).toBe(200);
    const { payload: _, ...withoutPayload } = whole.body.deadLetters[0];
    expect(summary.body).toEqual({ deadLetters: [withoutPayload], next: expect.any(String) });
    expect(JSON.stringify(summary.body).length).toBeLessThan(1000);
    const next = await api('GET', `/dead-letters?payload=false&after=${summary.body.next}`);
    expect(next.body).toEqual({ deadLetters: [whole.body.deadLetters[1]] });
  });

  it('refuses another value of payload', async () => {
    for (const value of ['no', '0', 'FALSE', '']) {
      const refused = await api('GET', `/dead-letters?payload=${value}`);
      expect(refused.status, value).toBe(400);
      expect(refused.body.error, value).toEqual({
        code: 'INVALID_ARGUMENT',
        message: 'querystring.payload must be equal to one of the allowed values',
      });
    }
  });

  it('is in the OpenAPI document, with its two values', async () => {
    const document = (await call(server.baseUrl, 'GET', '/openapi.json')).body;
    const parameters = document.paths['/v1/queues/{name}/dead-letters'].get.parameters;
    expect(parameters).toContainEqual(
      expect.objectContaining({
        name: 'payload',
        in: 'query',
        required: false,
        schema: expect.objectContaining({ enum: ['true', 'false'] }),
      }),
    );
  });
});
