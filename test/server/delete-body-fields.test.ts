import { afterEach, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

/**
 * A DELETE takes no body. One sent all the same may be `{}`, but a field in it is refused as an
 * unknown body field is on every other route (400, nothing applied): ignored, it would delete
 * the queue and every job in it whatever the field asked (`{"ifEmpty": true}`).
 */

let server: TestServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('DELETE routes refuse body fields', () => {
  it('DELETE /v1/queues/{name} with a field or a body not an object deletes nothing', async () => {
    server = await startTestServer();
    const { baseUrl, broker } = server;
    const queue = await broker.queue('kept');
    await queue.publish({ id: 'job-1', payload: 'p' });

    const withField = await call(baseUrl, 'DELETE', '/v1/queues/kept', {
      body: { ifEmpty: true },
    });
    expect(withField.status).toBe(400);
    expect(withField.body).toEqual({
      error: { code: 'INVALID_ARGUMENT', message: 'body has an unknown field "ifEmpty"' },
    });
    const notObject = await call(baseUrl, 'DELETE', '/v1/queues/kept', { body: [1] });
    expect(notObject.status).toBe(400);
    expect(notObject.body.error.code).toBe('INVALID_ARGUMENT');

    expect((await broker.listQueues()).map((info) => info.name)).toEqual(['kept']);
    expect((await queue.inspect()).ready).toEqual(['job-1']);

    // No body, or an empty object, deletes as ever.
    expect((await call(baseUrl, 'DELETE', '/v1/queues/kept', { body: {} })).body).toEqual({
      deleted: true,
    });
    await broker.queue('other');
    expect((await call(baseUrl, 'DELETE', '/v1/queues/other')).body).toEqual({ deleted: true });
    // An empty body named JSON, as a client that sets the header on every request sends it.
    await broker.queue('named');
    const named = await fetch(`${baseUrl}/v1/queues/named`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
    });
    expect(named.status).toBe(200);
    expect(await named.json()).toEqual({ deleted: true });
    expect(await broker.listQueues()).toEqual([]);
  });

  it('a POST with an empty body named JSON is still refused: it needs an object', async () => {
    server = await startTestServer();
    const answer = await fetch(`${server.baseUrl}/v1/queues/q/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
    });
    expect(answer.status).toBe(400);
    expect(await server.broker.listQueues()).toEqual([]);
  });

  it('DELETE /v1/queues/{name}/schedules/{schedule} with a field removes nothing', async () => {
    server = await startTestServer();
    const { baseUrl, broker } = server;
    const queue = await broker.queue('timed');
    await queue.schedule('hourly', 3_600_000, { payload: 'tick' });

    const refused = await call(baseUrl, 'DELETE', '/v1/queues/timed/schedules/hourly', {
      body: { keepJobs: false },
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      error: { code: 'INVALID_ARGUMENT', message: 'body has an unknown field "keepJobs"' },
    });
    expect((await queue.schedules()).map((view) => view.name)).toEqual(['hourly']);

    expect((await call(baseUrl, 'DELETE', '/v1/queues/timed/schedules/hourly')).body).toEqual({
      removed: true,
    });
  });
});
