import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

/**
 * R18 counts a job id (and a reason) in UTF-16 code units, as JavaScript counts a string's
 * length: an emoji counts two. JSON Schema's maxLength counts characters (code points), so the
 * OpenAPI document must say which count the server keeps, or a client that checks ids against
 * it sends ids of 129 to 256 emoji that the server refuses.
 */
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
  await call(server.baseUrl, 'PUT', '/v1/queues/ids', { body: {} });
});

afterAll(async () => {
  await server.close();
});

const emoji = (count: number) => '\u{1F600}'.repeat(count);

describe('job ids outside the Basic Multilingual Plane', () => {
  it('takes an id of 128 emoji (256 code units) and refuses one of 129, by path too', async () => {
    const fits = await call(server.baseUrl, 'POST', '/v1/queues/ids/jobs', {
      body: { id: emoji(128) },
    });
    expect(fits.status).toBe(200);
    const read = await call(
      server.baseUrl,
      'GET',
      `/v1/queues/ids/jobs/${encodeURIComponent(emoji(128))}`,
    );
    expect(read.status).toBe(200);
    expect(read.body.id).toBe(emoji(128));

    const over = await call(server.baseUrl, 'POST', '/v1/queues/ids/jobs', {
      body: { id: emoji(129) },
    });
    expect(over.status).toBe(400);
    expect(over.body.error.code).toBe('INVALID_ARGUMENT');
    const overByPath = await call(
      server.baseUrl,
      'GET',
      `/v1/queues/ids/jobs/${encodeURIComponent(emoji(129))}`,
    );
    expect(overByPath.status).toBe(400);
    expect(overByPath.body.error.message).toContain('got 258 characters');
  });

  it('the OpenAPI document says ids and reasons are counted in UTF-16 code units', async () => {
    const { body: doc } = await call(server.baseUrl, 'GET', '/openapi.json');
    const byPath = doc.paths['/v1/queues/{name}/jobs/{id}'].get.parameters.find(
      (parameter: { name: string }) => parameter.name === 'id',
    ).schema;
    const published =
      doc.paths['/v1/queues/{name}/jobs'].post.requestBody.content['application/json'].schema
        .properties.id;
    const reason =
      doc.paths['/v1/queues/{name}/nack'].post.requestBody.content['application/json'].schema
        .properties.reason;
    for (const schema of [byPath, published]) {
      expect(schema.maxLength).toBe(256);
      expect(schema.description).toMatch(/UTF-16 code units/);
    }
    expect(reason.maxLength).toBe(1024);
    expect(reason.description).toMatch(/UTF-16 code units/);
  });
});
