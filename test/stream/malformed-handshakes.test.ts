import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';

// A refused upgrade is an ordinary HTTP answer with the usual error body (docs/stream.md), also
// when the handshake itself is malformed: never the WebSocket library's own text answer. One in a
// version the server does not speak names those it does (RFC 6455 §4.4), so that a client can
// try one of them.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Sends `head` as the whole request and reads the answer until the server closes. */
function exchange(baseUrl: string, head: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(head));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      answer += chunk;
    });
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

function parse(answer: string): { status: number; type: string | undefined; body: unknown } {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  const status = Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]);
  const type = /^content-type: ([^\r\n;]+)/im.exec(head)?.[1];
  return { status, type, body: type === 'application/json' ? JSON.parse(body) : body };
}

function upgrade(method: string, headers: Record<string, string>): string {
  const lines = [
    `${method} /v1/stream HTTP/1.1`,
    'Host: 127.0.0.1',
    'Connection: Upgrade',
    'Upgrade: websocket',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

const KEY = 'dGhlIHNhbXBsZSBub25jZQ==';

describe('a malformed stream handshake', () => {
  it('by another method than GET is no route: 404 NOT_FOUND, as over plain HTTP', async () => {
    server = await startTestServer();
    const answer = parse(
      await exchange(
        server.baseUrl,
        upgrade('POST', {
          'Sec-WebSocket-Key': KEY,
          'Sec-WebSocket-Version': '13',
          'Content-Length': '0',
        }),
      ),
    );
    expect(answer).toMatchObject({
      status: 404,
      type: 'application/json',
      body: { error: { code: 'NOT_FOUND' } },
    });
  });

  it('without its Upgrade header, as a proxy that does not pass upgrades on sends it, is 501 UNSUPPORTED saying so, not no route', async () => {
    server = await startTestServer();
    const head = ['GET /v1/stream HTTP/1.1', 'Host: 127.0.0.1', 'Connection: close'];
    const answer = parse(await exchange(server.baseUrl, `${head.join('\r\n')}\r\n\r\n`));
    expect(answer).toMatchObject({
      status: 501,
      type: 'application/json',
      body: { error: { code: 'UNSUPPORTED' } },
    });
    const { message } = (answer.body as { error: { message: string } }).error;
    expect(message).toContain('asked for no upgrade');
    expect(message).toContain('a proxy in front must pass the Upgrade and Connection headers on');
  });

  it('without a valid key or version is 400 INVALID_ARGUMENT with the usual error body', async () => {
    server = await startTestServer();
    const handshakes: Record<string, string>[] = [
      { 'Sec-WebSocket-Version': '13' },
      { 'Sec-WebSocket-Key': 'short', 'Sec-WebSocket-Version': '13' },
      { 'Sec-WebSocket-Key': KEY, 'Sec-WebSocket-Version': '7' },
      { 'Sec-WebSocket-Key': KEY },
    ];
    for (const headers of handshakes) {
      const answer = parse(await exchange(server.baseUrl, upgrade('GET', headers)));
      expect(answer).toMatchObject({
        status: 400,
        type: 'application/json',
        body: { error: { code: 'INVALID_ARGUMENT' } },
      });
    }
  });
});

function versionsNamed(answer: string): string | undefined {
  const [head = ''] = answer.split('\r\n\r\n');
  return /^sec-websocket-version: ([^\r\n]*)/im.exec(head)?.[1];
}

describe('a stream handshake in a WebSocket version the server does not speak', () => {
  it('is refused 400 with the error body and a Sec-WebSocket-Version header naming 13 and 8, a wrong key alone without it', async () => {
    server = await startTestServer();
    const versions: Record<string, string>[] = [
      { 'Sec-WebSocket-Key': KEY, 'Sec-WebSocket-Version': '7' },
      { 'Sec-WebSocket-Key': KEY },
    ];
    for (const headers of versions) {
      const answer = await exchange(server.baseUrl, upgrade('GET', headers));
      expect(parse(answer)).toMatchObject({
        status: 400,
        body: { error: { code: 'INVALID_ARGUMENT' } },
      });
      expect(versionsNamed(answer)).toBe('13, 8');
    }
    // A wrong key alone is refused without naming versions: the version was one it speaks.
    const answer = await exchange(
      server.baseUrl,
      upgrade('GET', { 'Sec-WebSocket-Key': 'short', 'Sec-WebSocket-Version': '13' }),
    );
    expect(parse(answer)).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_ARGUMENT' } },
    });
    expect(versionsNamed(answer)).toBeUndefined();
  });
});
