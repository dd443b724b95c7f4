import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

const SERVER_INDEX = fileURLToPath(new URL('../../dist/server/index.js', import.meta.url));
const INDEX = fileURLToPath(new URL('../../dist/index.js', import.meta.url));

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

describe('what a newcomer sees', () => {
  it('starting a server prints no deprecation warning (a fresh process, the built code)', async () => {
    const script = `
      const { createApp } = await import(${JSON.stringify(SERVER_INDEX)});
      const { open } = await import(${JSON.stringify(INDEX)});
      const broker = await open('memory:');
      const app = await createApp({ broker });
      await app.listen({ host: '127.0.0.1', port: 0 });
      await app.close();
      await broker.close();
    `;
    const { stderr } = await promisify(execFile)(
      process.execPath,
      ['--input-type=module', '-e', script],
      { timeout: 20_000 },
    );
    expect(stderr).not.toMatch(/Deprecation|FSTDEP|Warning/);
  });

  it('every JSON answer ends with a newline, errors included', async () => {
    for (const [method, path] of [
      ['GET', '/healthz'],
      ['GET', '/v1/queues'],
      ['GET', '/v1/queues/missing'],
      ['GET', '/no-such-route'],
      ['GET', '/v1/queues/%ZZ'],
    ] as const) {
      const response = await fetch(`${server.baseUrl}${path}`, { method });
      expect(response.headers.get('content-type'), path).toContain('application/json');
      const text = await response.text();
      expect(text.endsWith('}\n'), `${path}: ${JSON.stringify(text)}`).toBe(true);
    }
    const created = await call(server.baseUrl, 'PUT', '/v1/queues/nl', { body: {} });
    expect(created.status).toBe(201);
  });
});
