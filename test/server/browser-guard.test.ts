import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startTestServer, type TestServer } from './helpers.js';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const server = await startTestServer(options);
  servers.push(server);
  return server;
}

/** A request with the headers a browser would send (Host and Origin set freely, as fetch cannot). */
function send(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(`${baseUrl}${path}`, { method, headers }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => {
        text += chunk.toString();
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
    });
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

const port = (server: TestServer) => new URL(server.baseUrl).port;
const KEYS = [
  {
    name: 'ops',
    key: 'ops-key-0123456789abcdef',
    allow: [{ queues: '*', actions: ['admin' as const] }],
  },
];

describe('requests a web browser may send on a page’s behalf', () => {
  it('a server without keys answers only requests naming it by a loopback name (DNS rebinding)', async () => {
    const server = await serve();
    const json = { 'content-type': 'application/json' };
    const rebound = await send(
      server.baseUrl,
      'PUT',
      '/v1/queues/rebind',
      {
        ...json,
        host: `evil.example:${port(server)}`,
        origin: `http://evil.example:${port(server)}`,
      },
      '{}',
    );
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error).toMatchObject({ code: 'FORBIDDEN' });
    expect(JSON.parse(rebound.body).error.message).toContain('evil.example');
    const read = await send(server.baseUrl, 'GET', '/v1/queues', { host: 'evil.example' });
    expect(read.status).toBe(403);
    expect((await server.broker.listQueues()).map((queue) => queue.name)).toEqual([]);
    for (const host of [
      `127.0.0.1:${port(server)}`,
      `localhost:${port(server)}`,
      `[::1]:${port(server)}`,
      '127.3.4.5',
    ]) {
      const made = await send(
        server.baseUrl,
        'PUT',
        `/v1/queues/q${servers.length}`,
        { ...json, host },
        '{}',
      );
      expect(made.status, host).toBeLessThan(300);
    }
  });

  it('a server with keys serves any host name it is reached by', async () => {
    const server = await serve({ keys: KEYS });
    const made = await send(
      server.baseUrl,
      'PUT',
      '/v1/queues/named',
      {
        'content-type': 'application/json',
        host: 'queues.internal.example:7700',
        authorization: `Bearer ${KEYS[0]?.key}`,
      },
      '{}',
    );
    expect(made.status).toBeLessThan(300);
  });

  it('a page of another origin changes nothing, through /v1 or the SQS endpoint’s form bodies', async () => {
    const server = await serve({ sqs: {} });
    await server.broker.queue('victim');
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const action = `Action=DeleteQueue&QueueUrl=${encodeURIComponent(`${server.baseUrl}/sqs/000000000000/victim`)}`;
    for (const origin of ['http://evil.example', 'null', `http://localhost:1`]) {
      const refused = await send(server.baseUrl, 'POST', '/sqs/', { ...form, origin }, action);
      expect(refused.status, origin).toBe(403);
      // In the SQS error shape of the protocol asked for.
      expect(refused.body).toContain('<Code>AccessDenied</Code>');
      expect(refused.body).toContain('is refused: this server takes browser requests only');
      const removed = await send(server.baseUrl, 'DELETE', '/v1/queues/victim', { origin });
      expect(removed.status, origin).toBe(403);
    }
    expect((await server.broker.listQueues()).map((queue) => queue.name)).toEqual(['victim']);
    // A page of the server itself (the dashboard) and a client without an Origin are served.
    const own = await send(
      server.baseUrl,
      'PUT',
      '/v1/queues/own',
      {
        'content-type': 'application/json',
        origin: server.baseUrl,
      },
      '{}',
    );
    expect(own.status).toBeLessThan(300);
    const sdk = await send(server.baseUrl, 'POST', '/sqs/', form, action);
    expect(sdk.status).toBe(200);
    expect((await server.broker.listQueues()).map((queue) => queue.name)).toEqual(['own']);
  });

  it('the stream refuses an upgrade naming another host on a server without keys', async () => {
    const server = await serve();
    const status = await new Promise<number>((resolve) => {
      const socket = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/stream`, {
        headers: {
          host: `evil.example:${port(server)}`,
          origin: `http://evil.example:${port(server)}`,
        },
      });
      socket.on('open', () => {
        socket.close();
        resolve(101);
      });
      socket.on('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      socket.on('error', () => {});
    });
    expect(status).toBe(403);
  });
});
