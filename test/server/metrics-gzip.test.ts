import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { acceptsGzip } from '../../src/server/content-coding.js';
import { call, startTestServer, type TestServer } from './helpers.js';

let server: TestServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A GET whose body is given as it came (fetch would undo the gzip). */
function rawGet(path: string, headers: Record<string, string>): Promise<RawAnswer> {
  const url = new URL(path, (server as TestServer).baseUrl);
  return new Promise((resolve, reject) => {
    const sent = request(url, { headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks),
        }),
      );
      response.on('error', reject);
    });
    sent.on('error', reject);
    sent.end();
  });
}

describe('Accept-Encoding', () => {
  it('takes gzip when it is listed with a weight above 0, or * is and gzip is not listed', () => {
    const cases: [string | string[] | undefined, boolean][] = [
      [undefined, false],
      ['', false],
      ['gzip', true],
      ['GZIP', true],
      ['x-gzip', true],
      ['gzip, deflate, br', true],
      ['deflate, br', false],
      ['identity', false],
      ['gzip;q=0', false],
      ['gzip; q=0.000', false],
      ['gzip;q=0.5', true],
      ['br;q=1.0, gzip;q=0.8', true],
      ['*', true],
      ['*;q=0', false],
      ['gzip;q=0, *', false],
      ['*;q=0, gzip', true],
      [['deflate', 'gzip'], true],
    ];
    for (const [header, expected] of cases)
      expect(acceptsGzip(header), String(header)).toBe(expected);
  });
});

describe('/metrics compression', () => {
  it('answers gzip to a scraper that takes it, the same text as uncompressed', async () => {
    server = await startTestServer();
    await call(server.baseUrl, 'PUT', '/v1/queues/gz', { body: {} });
    await call(server.baseUrl, 'POST', '/v1/queues/gz/jobs/batch', {
      body: { jobs: [{ id: 'a' }, { id: 'b' }] },
    });
    const plain = await rawGet('/metrics', {});
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toContain('accept-encoding');
    const text = plain.body.toString('utf8');
    expect(text).toContain('leaseq_jobs{queue="gz",state="ready"} 2');

    const zipped = await rawGet('/metrics', { 'accept-encoding': 'gzip, deflate' });
    expect(zipped.status).toBe(200);
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers['content-type']).toBe(plain.headers['content-type']);
    expect(zipped.headers.vary).toContain('accept-encoding');
    expect(zipped.body.length).toBeLessThan(plain.body.length / 3);
    const unzipped = gunzipSync(zipped.body).toString('utf8');
    // The same series (values of the server's own traffic move between two scrapes).
    const series = (body: string) =>
      body
        .split('\n')
        .filter((line) => line !== '' && !line.startsWith('#'))
        .map((line) => line.slice(0, line.lastIndexOf(' ')))
        .filter((name) => !name.startsWith('leaseq_http_') && !name.startsWith('process_'));
    expect(series(unzipped)).toEqual(series(text));
    expect(unzipped).toContain('leaseq_jobs{queue="gz",state="ready"} 2');
  });

  it('answers uncompressed to a scraper that refuses gzip', async () => {
    server = await startTestServer();
    const refused = await rawGet('/metrics', { 'accept-encoding': 'gzip;q=0, identity' });
    expect(refused.status).toBe(200);
    expect(refused.headers['content-encoding']).toBeUndefined();
    expect(refused.body.toString('utf8')).toMatch(/^# HELP /m);
  });

  it('sends the dashboard uncompressed to a browser that refuses gzip', async () => {
    server = await startTestServer();
    const page = await rawGet('/ui/', {});
    const script = /src="\.\/(app\.js\?v=[\w-]{8})"/.exec(page.body.toString('utf8'))?.[1];
    expect(script).toBeDefined();
    const refused = await rawGet(`/ui/${script}`, { 'accept-encoding': 'gzip;q=0' });
    expect(refused.status).toBe(200);
    expect(refused.headers['content-encoding']).toBeUndefined();
    const taken = await rawGet(`/ui/${script}`, { 'accept-encoding': 'gzip' });
    expect(taken.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(taken.body).equals(refused.body)).toBe(true);
  });
});
