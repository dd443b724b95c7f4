import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

/**
 * An entry of the operations route that is no operation at all (not an object, no type, an
 * unknown type) is refused in its place, as the stream and execute refuse it: the other
 * entries of the request still run.
 */
let server: TestServer;

const api = (method: string, path: string, body?: unknown) =>
  call(server.baseUrl, method, path, body === undefined ? {} : { body });

beforeAll(async () => {
  server = await startTestServer();
  await api('PUT', '/v1/queues/entries', {});
});

afterAll(async () => {
  await server.close();
});

describe('the operations route answers each entry on its own', () => {
  it('refuses entries that are no operation in their place and runs the others', async () => {
    const answer = await api('POST', '/v1/queues/entries/operations', {
      operations: [
        { type: 'publish', jobs: [{ id: 'kept' }] },
        { type: 'bogus' },
        { jobs: [] },
        null,
        7,
        [],
        { type: 'stats' },
      ],
    });
    expect(answer.status).toBe(200);
    const codes = answer.body.results.map(
      (result: { ok: boolean; error?: { code: string } }) => result.error?.code ?? 'ok',
    );
    expect(codes).toEqual([
      'ok',
      'INVALID_ARGUMENT',
      'INVALID_ARGUMENT',
      'INVALID_ARGUMENT',
      'INVALID_ARGUMENT',
      'INVALID_ARGUMENT',
      'ok',
    ]);
    expect(answer.body.results[1].error.message).toContain('"bogus"');
    expect(answer.body.results[6].value.ready).toBe(1);
    const job = await api('GET', '/v1/queues/entries/jobs/kept');
    expect(job.status).toBe(200);
  });

  it('still refuses a body whose operations are not a list, or more than maxBatch', async () => {
    const notList = await api('POST', '/v1/queues/entries/operations', { operations: {} });
    expect(notList.status).toBe(400);
    const tooMany = await api('POST', '/v1/queues/entries/operations', {
      operations: Array.from({ length: 101 }, () => ({ type: 'stats' })),
    });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.code).toBe('INVALID_ARGUMENT');
  });
});
