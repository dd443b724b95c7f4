import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { call } from './helpers.js';
import { cutWhileParked, startRacyServer } from './racy-broker.js';

/**
 * A request whose client goes away before its answer never finishes its response, so it never
 * reaches the hooks that run on an answer: the request metrics count it apart, with status
 * `aborted`, once, and do not time it. The long poll here is a POST whose body was read, where
 * Fastify's onRequestAbort does not run (it looks at `request.raw.aborted`, false once the body
 * is read).
 */

let close: (() => Promise<void>) | undefined;

afterEach(async () => {
  await close?.();
  close = undefined;
});

async function start() {
  const server = await startRacyServer();
  close = server.close;
  return server;
}

const RECEIVE = 'method="POST",route="/v1/queues/:name/receive"';

/** The lines of `/metrics` about the receive route. */
async function receiveSeries(baseUrl: string): Promise<string[]> {
  const text = (await call<string>(baseUrl, 'GET', '/metrics')).body;
  return text.split('\n').filter((line) => line.includes(RECEIVE));
}

/** The log lines of one message, once there are `count` of them. */
async function logged(lines: Record<string, unknown>[], msg: string, count: number) {
  for (let tries = 0; tries < 200; tries++) {
    if (lines.filter((line) => line.msg === msg).length >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never logged ${count} × "${msg}"`);
}

describe('/metrics HTTP requests whose client went away', () => {
  it('counts a long poll cut before its answer once, as status aborted, not timed; an answered one by its status', async () => {
    const { broker, baseUrl, parked, lines } = await start();
    const queue = await broker.queue('gone');
    await queue.publish({ id: 'job-1', payload: 'p' });
    await cutWhileParked(parked, `${baseUrl}/v1/queues/gone/receive`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ wait: 5000 }),
    });
    // The handler has run to its end (it gave the job it took back): nothing more comes of it.
    await logged(lines, 'released, client gone', 1);
    expect(await receiveSeries(baseUrl)).toEqual([
      `leaseq_http_requests_total{${RECEIVE},status="aborted"} 1`,
    ]);

    // Answered, then its connection closed by the client: counted by its status alone.
    const answered = await new Promise<number>((resolve, reject) => {
      const sent = request(`${baseUrl}/v1/queues/gone/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      });
      sent.on('error', reject);
      sent.on('response', (response) => {
        response.resume();
        response.on('end', () => {
          sent.destroy();
          resolve(response.statusCode ?? 0);
        });
      });
      sent.end('{}');
    });
    expect(answered).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const series = await receiveSeries(baseUrl);
    expect(series).toContain(`leaseq_http_requests_total{${RECEIVE},status="aborted"} 1`);
    expect(series).toContain(`leaseq_http_requests_total{${RECEIVE},status="200"} 1`);
    // Only the answer is timed.
    expect(series).toContain(`leaseq_http_request_duration_seconds_count{${RECEIVE}} 1`);
  });
});
