import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueName } from '../conformance/engines.js';
import { call, startTestServer, type TestServer } from './helpers.js';
import { serverStorages } from './storages.js';

const storages = await serverStorages();

/** As JSON text: a lone surrogate or U+0000 survives JSON.stringify as an escape. */
const UNSTORABLE_IDS = ['a\u0000b', '\ud800', '\udc00'];

for (const storage of storages) {
  const title = `R18 over HTTP on ${storage.name}`;
  (storage.skipReason === undefined ? describe : describe.skip)(title, () => {
    let server: TestServer;
    let q: string;
    beforeAll(async () => {
      server = await startTestServer({ url: storage.url });
      q = queueName('text');
      expect((await call(server.baseUrl, 'PUT', `/v1/queues/${q}`, { body: {} })).status).toBe(201);
    });
    afterAll(async () => {
      await call(server.baseUrl, 'DELETE', `/v1/queues/${q}`);
      await server?.close();
    });

    it('R18 answers 400 INVALID_ARGUMENT, never 500, for an id with U+0000 or a lone surrogate', async () => {
      const base = `${server.baseUrl}/v1/queues/${q}`;
      for (const id of UNSTORABLE_IDS) {
        const answers = [
          await call(base, 'POST', '/jobs', { body: { id } }),
          await call(base, 'POST', '/jobs/batch', { body: { jobs: [{ id: 'ok' }, { id }] } }),
          await call(base, 'POST', '/dead-letters/redrive', { body: { ids: [id] } }),
          await call(base, 'POST', '/dead-letters/purge', { body: { ids: [id] } }),
        ];
        for (const answer of answers) {
          expect(answer.status, JSON.stringify(id)).toBe(400);
          expect(answer.body.error.code).toBe('INVALID_ARGUMENT');
        }
      }
      const lookup = await call(base, 'GET', '/jobs/a%00b');
      expect(lookup.status).toBe(400);
      expect(lookup.body.error.code).toBe('INVALID_ARGUMENT');
      const stats = await call(base, 'GET', '/stats');
      expect(stats.body.published).toBe(0);
    });

    it('R18 answers 400 for a nack reason with U+0000, and the delivery stays live', async () => {
      const base = `${server.baseUrl}/v1/queues/${q}`;
      await call(base, 'POST', '/jobs', { body: { id: 'r' } });
      const received = await call(base, 'POST', '/receive', { body: {} });
      const receipt = received.body.deliveries[0].receipt;
      const nack = await call(base, 'POST', '/nack', {
        body: { receipt, requeue: false, reason: 'bad\u0000reason' },
      });
      expect(nack.status).toBe(400);
      expect(nack.body.error.code).toBe('INVALID_ARGUMENT');
      expect((await call(base, 'POST', '/ack', { body: { receipt } })).body).toEqual({
        acked: true,
      });
    });

    it('R18 keeps U+0000 and lone surrogates in a payload exactly', async () => {
      const base = `${server.baseUrl}/v1/queues/${q}`;
      const payload = { text: 'a\u0000b\ud800', list: ['\udc00'] };
      const raw = JSON.stringify({ id: 'p', payload });
      expect((await call(base, 'POST', '/jobs', { raw })).status).toBe(200);
      const received = await call(base, 'POST', '/receive', { body: {} });
      expect(received.body.deliveries[0].payload).toEqual(payload);
      await call(base, 'POST', '/ack', { body: { receipt: received.body.deliveries[0].receipt } });
    });
  });
}
