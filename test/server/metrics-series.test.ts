import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { call, startTestServer, type TestServer } from './helpers.js';

let server: TestServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function scrape(): Promise<string[]> {
  const { body } = await call<string>((server as TestServer).baseUrl, 'GET', '/metrics');
  return body.split('\n');
}

function series(lines: string[], family: string): string[] {
  return lines.filter((line) => line.startsWith(`${family}{`));
}

describe('/metrics series of a fixed set of label values', () => {
  it('are written at 0 from the start, so that rate() sees the first event of each', async () => {
    server = await startTestServer();
    const fresh = await scrape();
    expect(series(fresh, 'leaseq_stream_connections_closed_total')).toEqual([
      'leaseq_stream_connections_closed_total{reason="client"} 0',
      'leaseq_stream_connections_closed_total{reason="heartbeat-timeout"} 0',
      'leaseq_stream_connections_closed_total{reason="slow-consumer"} 0',
      'leaseq_stream_connections_closed_total{reason="shutdown"} 0',
    ]);
    expect(series(fresh, 'leaseq_stream_frames_received_total')).toEqual([
      'leaseq_stream_frames_received_total{type="batch"} 0',
      'leaseq_stream_frames_received_total{type="subscribe"} 0',
      'leaseq_stream_frames_received_total{type="credit"} 0',
      'leaseq_stream_frames_received_total{type="unsubscribe"} 0',
      'leaseq_stream_frames_received_total{type="invalid"} 0',
    ]);

    // One connection that sends an unreadable frame and closes: those series count from 0.
    const socket = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/stream`);
    await new Promise((resolve, reject) => {
      socket.once('message', resolve);
      socket.once('error', reject);
    });
    socket.send('not json');
    await new Promise((resolve) => socket.once('message', resolve));
    socket.close();
    await new Promise((resolve) => socket.once('close', resolve));
    let lines = await scrape();
    for (let tries = 0; tries < 100 && !lines.includes('leaseq_stream_connections 0'); tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      lines = await scrape();
    }
    expect(lines).toContain('leaseq_stream_connections_closed_total{reason="client"} 1');
    expect(lines).toContain('leaseq_stream_connections_closed_total{reason="slow-consumer"} 0');
    expect(lines).toContain('leaseq_stream_frames_received_total{type="invalid"} 1');
    expect(lines).toContain('leaseq_stream_frames_received_total{type="batch"} 0');
  });
});
