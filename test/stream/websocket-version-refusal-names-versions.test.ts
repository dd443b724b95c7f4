import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';

// RFC 6455 §4.4: a handshake in a version the server does not speak is refused with a
// Sec-WebSocket-Version header naming those it does, so that a client can try one of them.

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

function handshake(headers: Record<string, string>): string {
  const lines = [
    'GET /v1/stream HTTP/1.1',
    'Host: 127.0.0.1',
    'Connection: Upgrade',
    'Upgrade: websocket',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function versionsNamed(answer: string): string | undefined {
  const [head = ''] = answer.split('\r\n\r\n');
  return /^sec-websocket-version: ([^\r\n]*)/im.exec(head)?.[1];
}

describe('a stream handshake in a WebSocket version the server does not speak', () => {
  it('is refused 400 with the error body and a Sec-WebSocket-Version header naming 13 and 8, a wrong key alone without it', async () => {
    server = await startTestServer();
    const versions: Record<string, string>[] = [{ 'Sec-WebSocket-Version': '7' }, {}];
    for (const version of versions) {
      const answer = await exchange(server.baseUrl, handshake(version));
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain('"code":"INVALID_ARGUMENT"');
      expect(versionsNamed(answer)).toBe('13, 8');
    }
    // A wrong key alone is refused without naming versions: the version was one it speaks.
    const answer = await exchange(
      server.baseUrl,
      handshake({ 'Sec-WebSocket-Version': '13' }).replace(
        /Sec-WebSocket-Key: [^\r]*/,
        'Sec-WebSocket-Key: short',
      ),
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('"code":"INVALID_ARGUMENT"');
    expect(versionsNamed(answer)).toBeUndefined();
  });
});
