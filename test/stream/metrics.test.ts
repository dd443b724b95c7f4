import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { call, startTestServer, type TestServer } from '../server/helpers.js';
import { FrameClient } from './frames.js';

const open: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const each of open.splice(0).reverse()) await each.close();
});

async function serve(): Promise<TestServer> {
  const server = await startTestServer({});
  open.push(server);
  await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: { visibility: 1000 } });
  return server;
}

/** One sample of the exposition text: its value, or undefined when the series is absent. */
async function sample(server: TestServer, series: string): Promise<number | undefined> {
  const { body } = await call<string>(server.baseUrl, 'GET', '/metrics');
  const line = body.split('\n').find((each) => each.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let tries = 0; tries < 100; tries++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('condition not met in time');
}

describe('the stream on /metrics', () => {
  it('counts connections, frames, operations by outcome, subscriptions and pushed deliveries', async () => {
    const server = await serve();
    const client = await FrameClient.open(server.baseUrl);
    expect(await sample(server, 'leaseq_stream_connections')).toBe(1);
    expect(await sample(server, 'leaseq_stream_connections_opened_total')).toBe(1);

    await client.request({
      type: 'batch',
      id: 1,
      queue: 'jobs',
      operations: [
        { type: 'publish', jobs: [{ id: 'a' }, { id: 'b' }, { id: 'c' }] },
        { type: 'ack', receipts: ['forged'] },
        { type: 'nope' },
      ],
    });
    client.send('not json');
    await client.next((frame) => frame.type === 'error' && frame.id === undefined);
    await client.request({ type: 'subscribe', id: 2, queue: 'jobs', prefetch: 2 });
    await client.next(() => client.pushed(2).length >= 2);
    expect(await sample(server, 'leaseq_stream_subscriptions')).toBe(1);

    expect(await sample(server, 'leaseq_stream_frames_received_total{type="batch"}')).toBe(1);
    expect(await sample(server, 'leaseq_stream_frames_received_total{type="subscribe"}')).toBe(1);
    expect(await sample(server, 'leaseq_stream_frames_received_total{type="invalid"}')).toBe(1);
    expect(
      await sample(server, 'leaseq_stream_operations_total{type="publish",outcome="ok"}'),
    ).toBe(1);
    expect(
      await sample(server, 'leaseq_stream_operations_total{type="ack",outcome="INVALID_RECEIPT"}'),
    ).toBe(1);
    expect(
      await sample(
        server,
        'leaseq_stream_operations_total{type="invalid",outcome="INVALID_ARGUMENT"}',
      ),
    ).toBe(1);
    // Prefetch 2: two of the three jobs pushed, in one frame or more.
    expect(await sample(server, 'leaseq_stream_deliveries_pushed_total')).toBe(2);
    const pushFrames = await sample(server, 'leaseq_stream_push_frames_total');
    expect(pushFrames).toBeGreaterThanOrEqual(1);
    expect(pushFrames).toBeLessThanOrEqual(2);

    await client.close();
    await waitFor(async () => (await sample(server, 'leaseq_stream_connections')) === 0);
    expect(await sample(server, 'leaseq_stream_subscriptions')).toBe(0);
    expect(await sample(server, 'leaseq_stream_connections_closed_total{reason="client"}')).toBe(1);
  });

  it('counts upgrades refused before a connection opens, by code', async () => {
    const server = await serve();
    const socket = new WebSocket(`${server.baseUrl.replace(/^http/, 'ws')}/v1/nowhere`);
    await new Promise<void>((resolve) => {
      socket.on('error', () => resolve());
      socket.on('unexpected-response', () => resolve());
    });
    socket.terminate();
    expect(await sample(server, 'leaseq_stream_upgrades_refused_total{code="NOT_FOUND"}')).toBe(1);
    expect(await sample(server, 'leaseq_stream_connections_opened_total')).toBe(0);
  });
});
