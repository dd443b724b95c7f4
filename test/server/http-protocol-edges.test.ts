import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { call, startTestServer, type TestServer } from './helpers.js';

/**
 * Requests at the edge of HTTP/1.1 that Node itself would answer or take over: each is served,
 * or refused with an `{ error: { code, message } }` body, never with an empty one.
 */
let server: TestServer;
let port: number;

beforeAll(async () => {
  server = await startTestServer();
  port = Number(new URL(server.baseUrl).port);
  await call(server.baseUrl, 'PUT', '/v1/queues/edges', { body: {} });
});

afterAll(async () => {
  await server.close();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Every byte the server sent before it closed the connection (or the wait ended). */
  text: string;
}

/** Writes `text` on a fresh connection and reads what comes back until the server closes it. */
function raw(text: string, waitMs = 2000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let received = '';
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(parse(received));
    };
    const timer = setTimeout(done, waitMs);
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8');
    });
    socket.on('close', done);
    socket.on('error', reject);
  });
}

/** The first answer of `text`. */
function parse(text: string): RawAnswer {
  const [head = '', ...rest] = text.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => {
      const at = line.indexOf(':');
      return [line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim()];
    }),
  );
  const length = Number(headers['content-length'] ?? 0);
  return {
    status: Number(statusLine.split(' ')[1]),
    headers,
    body: rest.join('\r\n\r\n').slice(0, length),
    text,
  };
}

function errorOf(answer: RawAnswer): { code: string; message: string } {
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(answer.body) as { error: { code: string; message: string } };
  expect(Object.keys(body)).toEqual(['error']);
  return body.error;
}

const H2C =
  'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAA\r\n';

describe('an Upgrade header the server does not support (Upgrade: h2c, as curl --http2 sends)', () => {
  it('a GET is served as the plain HTTP/1.1 request it also is', async () => {
    const answer = await raw(
      `GET /v1/queues/edges/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n${H2C}\r\n`,
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ ready: 0, active: 0 });
  });

  it('a POST with a body is served too: the job is published', async () => {
    const body = '{"id":"h2c-job"}';
    const answer = await raw(
      `POST /v1/queues/edges/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n${H2C}` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ id: 'h2c-job', duplicate: false });
    const job = await call(server.baseUrl, 'GET', '/v1/queues/edges/jobs/h2c-job');
    expect(job.body).toMatchObject({ id: 'h2c-job', state: 'ready' });
  });

  it('its answer closes the connection: Node drops what was pipelined after it', async () => {
    const answer = await raw(
      `GET /v1/queues/edges/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n${H2C}\r\n` +
        'GET /v1/queues/edges/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
      5000,
    );
    expect(answer.status).toBe(200);
    expect(answer.headers.connection).toBe('close');
  });

  it('a WebSocket upgrade of the stream path still opens the stream', async () => {
    const socket = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/stream`);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    socket.close();
  });

  it('a WebSocket upgrade of another path is 404 in the API shape', async () => {
    const answer = await raw(
      'GET /v1/elsewhere HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    expect(answer.status).toBe(404);
    expect(errorOf(answer)).toEqual({ code: 'NOT_FOUND', message: 'no such route' });
  });
});

describe('requests Node would refuse with an empty body', () => {
  it('an HTTP/1.1 request without Host: 400 INVALID_ARGUMENT, connection closed', async () => {
    const answer = await raw('GET /v1/stats HTTP/1.1\r\n\r\n');
    expect(answer.status).toBe(400);
    expect(answer.headers.connection).toBe('close');
    expect(errorOf(answer)).toEqual({
      code: 'INVALID_ARGUMENT',
      message: 'an HTTP/1.1 request needs a Host header (RFC 9112)',
    });
  });

  it('an HTTP/1.0 request without Host is still served', async () => {
    const answer = await raw('GET /v1/queues/edges/stats HTTP/1.0\r\n\r\n');
    expect(answer.status).toBe(200);
  });

  it('Expect: bogus: 417 with an INVALID_ARGUMENT body, nothing done', async () => {
    const body = '{"id":"expected"}';
    const answer = await raw(
      'POST /v1/queues/edges/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: bogus\r\n' +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(answer.status).toBe(417);
    expect(answer.headers.connection).toBe('close');
    expect(errorOf(answer)).toEqual({
      code: 'INVALID_ARGUMENT',
      message:
        'the Expect header asks for "bogus", which this server cannot meet: it knows only 100-continue; send the request without it',
    });
    const job = await call(server.baseUrl, 'GET', '/v1/queues/edges/jobs/expected');
    expect(job.status).toBe(404);
  });

  it('Expect: 100-continue goes on as ever', async () => {
    const body = '{"id":"continued"}';
    const answer = await raw(
      'POST /v1/queues/edges/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\n' +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(answer.text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
  });
});
