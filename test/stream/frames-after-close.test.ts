import { afterEach, describe, expect, it, vi } from 'vitest';
import { StreamMetrics } from '../../src/server/metrics.js';
import { StreamConnection } from '../../src/server/stream/stream-connection.js';
import { call, startTestServer } from '../server/helpers.js';
import { until } from '../until.js';
import { FrameClient } from './frames.js';

// leaseq_stream_frames_received_total counts every frame that arrived, by type: also those that
// came after the server began to close the connection, which are not run nor answered.

afterEach(() => {
  vi.restoreAllMocks();
});

describe('frames that arrive once the server closes the connection', () => {
  it('are counted by type in the frame metrics, and neither run nor answered', async () => {
    // The server is shutting down by then, its /metrics no longer served: its counter is read
    // where it is counted.
    const counted = vi.spyOn(StreamMetrics.prototype, 'frameReceived');
    const closing = vi.spyOn(StreamConnection.prototype, 'close');
    const server = await startTestServer();
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    const client = await FrameClient.open(server.baseUrl);
    const first = await client.request({
      type: 'batch',
      id: 1,
      queue: 'jobs',
      operations: [{ type: 'stats' }],
    });
    expect(first.type).toBe('results');

    // The client reads nothing more, so that it still sends once the server's close frame is on
    // its way: it sees that close frame only when it reads again.
    const raw = (client.socket as unknown as { _socket: { pause(): void; resume(): void } })
      ._socket;
    raw.pause();
    const shutDown = server.close();
    await until(() => closing.mock.calls.length > 0, {
      what: 'the server to close the connection',
      tries: 250,
      interval: 20,
    });
    client.send({
      type: 'batch',
      id: 2,
      queue: 'jobs',
      operations: [{ type: 'publish', jobs: [{ id: 'late' }] }],
    });
    client.send({ type: 'subscribe', id: 3, queue: 'jobs', prefetch: 1 });
    client.send('not json');
    raw.resume();
    expect(await client.closed).toBe(1001);
    await shutDown;

    expect(counted.mock.calls.map(([type]) => type)).toEqual([
      'batch',
      'batch',
      'subscribe',
      'invalid',
    ]);
    expect(client.frames.filter((frame) => frame.id === 2 || frame.id === 3)).toEqual([]);
    expect(client.frames.filter((frame) => frame.type === 'error')).toEqual([]);
  });
});
