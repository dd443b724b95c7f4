import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATUS_BY_CODE } from '../../src/server/errors.js';
import { call, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server?.close();
});

/** Sends raw bytes and returns the status line and body of the answer. */
function raw(request: string): Promise<{ status: number; body: unknown }> {
  const { port, hostname } = new URL(server.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString('utf8');
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), body: JSON.parse(body) });
    });
    socket.end(request);
  });
}

function expectShape(body: unknown, code: string): void {
  expect(body).toEqual({ error: { code, message: expect.any(String) } });
}

describe('every error answer keeps the {error:{code,message}} shape', () => {
  it('a malformed percent-encoding in the path is 400 INVALID_ARGUMENT', async () => {
    for (const path of ['/v1/queues/%ZZ', '/v1/queues/q/jobs/%ED%A0%80', '/v1/queues/%']) {
      const answer = await call(server.baseUrl, 'GET', path);
      expect(answer.status, path).toBe(400);
      expectShape(answer.body, 'INVALID_ARGUMENT');
    }
  });

  it('a path segment over 4096 characters is 414 URI_TOO_LONG', async () => {
    const answer = await call(server.baseUrl, 'GET', `/v1/queues/${'a'.repeat(10_000)}`);
    expect(answer.status).toBe(414);
    expectShape(answer.body, 'URI_TOO_LONG');
  });

  it('request headers over the size limit are 431 HEADERS_TOO_LARGE', async () => {
    const answer = await raw(`GET /${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(answer.status).toBe(431);
    expectShape(answer.body, 'HEADERS_TOO_LARGE');
  });

  it('a request that is not HTTP is 400 INVALID_ARGUMENT', async () => {
    const answer = await raw('NOT HTTP AT ALL\r\n\r\n');
    expect(answer.status).toBe(400);
    expectShape(answer.body, 'INVALID_ARGUMENT');
  });

  it('the OpenAPI document names every code an error may carry, with its status', async () => {
    const doc = (await call(server.baseUrl, 'GET', '/openapi.json')).body;
    const error =
      doc.components.responses.Error.content['application/json'].schema.properties.error;
    expect(error.properties.code.enum).toEqual(Object.keys(STATUS_BY_CODE));
    for (const [code, status] of Object.entries(STATUS_BY_CODE)) {
      expect(error.properties.code.description).toContain(`${code} ${status}`);
    }
    // An operation refused in a batch carries the same codes.
    const batch =
      doc.paths['/v1/queues/{name}/operations'].post.responses['200'].content['application/json']
        .schema;
    expect(batch.properties.results.items.properties.error.properties.code.enum).toEqual(
      Object.keys(STATUS_BY_CODE),
    );
  });

  it('docs/http-api.md lists every status and code the server answers with', () => {
    const doc = readFileSync(new URL('../../docs/http-api.md', import.meta.url), 'utf8');
    for (const [code, status] of Object.entries(STATUS_BY_CODE)) {
      const row = new RegExp(`^\\| ${status} +\\|[^\\n]*\`${code}\``, 'm');
      expect(doc, `${status} ${code}`).toMatch(row);
    }
  });
});
