import { afterEach, describe, expect, it, vi } from 'vitest';
import { call, startTestServer, type TestServer } from '../server/helpers.js';
import { FrameClient } from './frames.js';

const open: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const each of open.splice(0).reverse()) await each.close();
});

/** Frames of at most 16 KiB; a buffer bound far above the push, so every frame goes out. */
const FRAME_BYTES = 16 * 1024;

async function serve(): Promise<TestServer> {
  const server = await startTestServer({
    limits: {
      maxBodyBytes: FRAME_BYTES,
      maxPayloadBytes: 8 * 1024,
      maxStreamBufferBytes: 8 * 1024 * 1024,
    },
  });
  open.push(server);
  await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: { visibility: 60_000 } });
  return server;
}

describe('the stream: framing a push', () => {
  it('serializes each delivery of a push once, in frames that fit and keep its order', async () => {
    const server = await serve();
    // 60 deliveries of about 2 KiB (3 bytes a character), 6 or 7 to a frame: about 9 frames.
    const count = 60;
    const ids = Array.from({ length: count }, (_, index) => `j${index}`);
    for (const id of ids) {
      await call(server.baseUrl, 'POST', '/v1/queues/jobs/jobs', {
        body: { id, payload: `<${id}>${'中'.repeat(700)}` },
      });
    }
    const client = await FrameClient.open(server.baseUrl);
    open.push(client);
    // The text of each message as it came, to check its bytes and shape.
    const raw: string[] = [];
    client.socket.on('message', (data) => raw.push(String(data)));

    // Every JSON.stringify in this process from here to the last push, with what it returned.
    const stringify = vi.spyOn(JSON, 'stringify');
    await client.request({ type: 'subscribe', id: 1, queue: 'jobs', prefetch: count });
    await client.next(() => client.pushed(1).length >= count, 10_000);
    const texts = stringify.mock.results.flatMap((result) =>
      result.type === 'return' && typeof result.value === 'string' ? [result.value] : [],
    );
    stringify.mockRestore();

    // How many times a delivery was serialized, counted by its payload marker wherever it
    // went: once each, plus slack, not again for every frame carved out of what is left.
    const serialized = texts.reduce((sum, text) => sum + (text.match(/<j\d+>/g)?.length ?? 0), 0);
    expect(serialized).toBeGreaterThanOrEqual(count);
    expect(serialized).toBeLessThanOrEqual(2 * count + 2);

    const pushes = raw.filter((text) => text.startsWith('{"type":"deliveries"'));
    expect(pushes.length).toBeGreaterThan(1);
    for (const text of pushes) {
      expect(Buffer.byteLength(text)).toBeLessThanOrEqual(FRAME_BYTES);
      // The wire format as JSON.stringify writes a frame: type, subscription, now, deliveries.
      const frame = JSON.parse(text);
      expect(Object.keys(frame)).toEqual(['type', 'subscription', 'now', 'deliveries']);
      expect(JSON.stringify(frame)).toBe(text);
    }
    // Every delivery once, in the order the queue gave them.
    expect(client.pushed(1).map((delivery: { id: string }) => delivery.id)).toEqual(ids);
    const stats = await call(server.baseUrl, 'GET', '/v1/queues/jobs/stats');
    expect(stats.body).toMatchObject({ ready: 0, active: count, unworked: 0 });
  });
});
