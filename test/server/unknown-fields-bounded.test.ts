import { afterAll, beforeAll, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

// A request body's unknown fields are refused as before (400 INVALID_ARGUMENT, nothing done);
// the message echoes a bounded part of them, as every other door does.

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
  await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
});
afterAll(async () => {
  await server.close();
});

const many = (count: number) =>
  Object.fromEntries(Array.from({ length: count }, (_, n) => [`field${n}`, 1]));
const LONG = `${'n'.repeat(64)}${'x'.repeat(499_936)}`;

it('a body with thousands of unknown fields names the first 10 and counts the rest', async () => {
  for (const [method, path] of [
    ['POST', '/v1/queues/jobs/receive'],
    ['POST', '/v1/queues/jobs/jobs'],
    ['PUT', '/v1/queues/other'],
  ]) {
    const answer = await call(server.baseUrl, method as string, path as string, {
      body: many(5000),
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('INVALID_ARGUMENT');
    expect(answer.body.error.message).toBe(
      [
        ...Array.from({ length: 10 }, (_, n) => `body has an unknown field "field${n}"`),
        'and 4,990 more unknown fields',
      ].join('; '),
    );
  }
  expect((await call(server.baseUrl, 'GET', '/v1/queues/other')).status).toBe(404);
});

it('a body field name of 500,000 characters is shown by its first 64 and its length', async () => {
  const answer = await call(server.baseUrl, 'POST', '/v1/queues/jobs/receive', {
    body: { [LONG]: 1 },
  });
  expect(answer.status).toBe(400);
  expect(answer.body.error).toEqual({
    code: 'INVALID_ARGUMENT',
    message: `body has an unknown field "${'n'.repeat(64)}…" (500,000 characters)`,
  });
});

it('the jobs of a batch and the operations of /operations are bounded the same way', async () => {
  const batch = await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs/batch', {
    body: { jobs: Array.from({ length: 50 }, () => ({ a: 1 })) },
  });
  expect(batch.status).toBe(400);
  expect(batch.body.error.message).toContain(
    'body.jobs.9 has an unknown field "a"; and 40 more unknown fields',
  );
  const operations = await call(server.baseUrl, 'POST', '/v1/queues/jobs/operations', {
    body: { operations: [{ type: 'stats', [LONG]: 1, ...many(5000) }] },
  });
  expect(operations.status).toBe(200);
  expect(operations.body.results[0].error).toEqual({
    code: 'INVALID_ARGUMENT',
    message: [
      `unknown field "${'n'.repeat(64)}…" (500,000 characters) of stats`,
      ...Array.from({ length: 9 }, (_, n) => `unknown field "field${n}" of stats`),
      'and 4,991 more unknown fields',
    ].join('; '),
  });
  expect((await call(server.baseUrl, 'GET', '/v1/queues/jobs/stats')).body).toMatchObject({
    published: 0,
  });
});
