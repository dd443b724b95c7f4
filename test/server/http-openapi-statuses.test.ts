import { request } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

/**
 * The OpenAPI document lists every status a route really answers with: each request below is
 * answered with an error status, which the document must list for that operation.
 */
let server: TestServer;
// biome-ignore lint/suspicious/noExplicitAny: the document is read loosely
let doc: any;

beforeAll(async () => {
  server = await startTestServer({ limits: { maxBodyBytes: 1024 } });
  doc = (await call(server.baseUrl, 'GET', '/openapi.json')).body;
  await call(server.baseUrl, 'PUT', '/v1/queues/statuses', { body: {} });
  await call(server.baseUrl, 'PUT', '/v1/queues/statuses-dlq', {
    body: { deadLetterQueue: 'statuses' },
  });
});

afterAll(async () => {
  await server.close();
});

function listed(method: string, template: string): string[] {
  const operation = doc.paths[template]?.[method.toLowerCase()];
  expect(operation, `${method} ${template}`).toBeDefined();
  return Object.keys(operation.responses);
}

/** A request with headers fetch would not send as given (Host, huge ones). */
function raw(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const sent = request(`${server.baseUrl}${path}`, { method, headers }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    sent.on('error', reject);
    sent.end(body);
  });
}

/** The status of a request written as it is on a fresh connection. */
function rawText(text: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const { port } = new URL(server.baseUrl);
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(text));
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8');
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(received);
      if (status !== null) {
        socket.destroy();
        resolve(Number(status[1]));
      }
    });
    socket.on('error', reject);
  });
}

describe('the OpenAPI document lists the error statuses routes answer with', () => {
  it('400 for a query parameter on GET /v1/queues, /v1/stats, /v1/me, /v1/limits', async () => {
    for (const path of ['/v1/queues', '/v1/stats', '/v1/me', '/v1/limits']) {
      const answer = await call(server.baseUrl, 'GET', `${path}?x=1`);
      expect(answer.status, path).toBe(400);
      expect(listed('GET', path), path).toContain('400');
    }
  });

  it('409 for PATCH /v1/queues/{name} making a dead-letter chain loop back', async () => {
    const answer = await call(server.baseUrl, 'PATCH', '/v1/queues/statuses', {
      body: { deadLetterQueue: 'statuses-dlq' },
    });
    expect(answer.status).toBe(409);
    expect(listed('PATCH', '/v1/queues/{name}')).toContain('409');
  });

  it('415 and 413 for a DELETE with a body that is not JSON, or too large', async () => {
    const text = await call(server.baseUrl, 'DELETE', '/v1/queues/missing', {
      raw: 'zz',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(415);
    const large = await call(server.baseUrl, 'DELETE', '/v1/queues/missing', {
      raw: JSON.stringify({ pad: 'x'.repeat(2048) }),
    });
    expect(large.status).toBe(413);
    for (const template of ['/v1/queues/{name}', '/v1/queues/{name}/schedules/{schedule}']) {
      expect(listed('DELETE', template), template).toEqual(expect.arrayContaining(['413', '415']));
    }
  });

  it('403 for /healthz naming a host that is not loopback on a keyless server', async () => {
    expect(await raw('GET', '/healthz', { host: 'evil.example' })).toBe(403);
    expect(listed('GET', '/healthz')).toContain('403');
  });

  it('414 for an over-long path segment', async () => {
    expect(await raw('GET', `/v1/queues/${'x'.repeat(5000)}`, {})).toBe(414);
    expect(listed('GET', '/v1/queues/{name}')).toContain('414');
  });

  it('431 for headers too large, 417 for Expect, 415 for a compressed body, 400 without Host: on every route', async () => {
    expect(await raw('GET', '/readyz', { 'x-pad': 'x'.repeat(17 * 1024) })).toBe(431);
    expect(await raw('GET', '/readyz', { expect: 'bogus' })).toBe(417);
    expect(await raw('GET', '/readyz', { 'content-encoding': 'gzip' })).toBe(415);
    expect(await rawText('GET /readyz HTTP/1.1\r\n\r\n')).toBe(400);
    // 408 (a request too slow) takes seconds to see: listed with the others.
    for (const [path, methods] of Object.entries(doc.paths as Record<string, object>)) {
      for (const method of Object.keys(methods)) {
        expect(listed(method, path), `${method} ${path}`).toEqual(
          expect.arrayContaining(['400', '403', '408', '415', '417', '431', '500', '503']),
        );
      }
    }
  });
});
