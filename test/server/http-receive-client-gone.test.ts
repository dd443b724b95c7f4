import { afterEach, describe, expect, it } from 'vitest';
import { cutWhileParked, startRacyServer } from './racy-broker.js';

/**
 * A long poll that takes jobs just as its client goes away. Manual-ack jobs go back to ready
 * (R33); auto-acked ones were removed as they were taken (R22, at most once): they cannot be
 * put back, and each is logged as lost rather than given back.
 *
 * The race is made certain by a broker whose waiting receives answer only once the request's
 * signal says the client left, and then reserve what is ready (racy-broker.ts).
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

/** A receive whose connection is cut once the server's receive is parked. */
function cutReceive(parked: Promise<void>, url: string, body: unknown): Promise<void> {
  return cutWhileParked(parked, url, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** The log lines of one message, once there are `count` of them. */
async function linesOf(lines: Record<string, unknown>[], msg: string, count: number) {
  for (let tries = 0; tries < 200; tries++) {
    const found = lines.filter((line) => line.msg === msg);
    if (found.length >= count) return found;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never logged ${count} × "${msg}"`);
}

const LOST = 'auto-acked job lost: its client went away before the answer (at most once, R22)';

describe('POST /v1/queues/{name}/receive with wait, reserved as its client leaves', () => {
  it('ack "auto": the jobs are not given back but logged as lost, at warn, with queue, jobId and token', async () => {
    const { broker, baseUrl, parked, lines } = await start();
    const queue = await broker.queue('gone-auto');
    await queue.publish({ id: 'job-1', payload: 'p' });
    await queue.publish({ id: 'job-2', payload: 'p' });
    await cutReceive(parked, `${baseUrl}/v1/queues/gone-auto/receive`, {
      wait: 5000,
      max: 2,
      ack: 'auto',
    });
    const lost = await linesOf(lines, LOST, 2);
    expect(lost).toEqual([
      expect.objectContaining({ level: 40, queue: 'gone-auto', jobId: 'job-1', token: 1 }),
      expect.objectContaining({ level: 40, queue: 'gone-auto', jobId: 'job-2', token: 2 }),
    ]);
    // No give-back was tried: an auto-acked job is gone, not stale.
    expect(lines.filter((line) => line.msg === 'stale release')).toEqual([]);
    expect(lines.filter((line) => line.msg === 'released, client gone')).toEqual([]);
    expect(await queue.stats()).toMatchObject({ ready: 0, active: 0, autoAcked: 2, unworked: 0 });
    expect(await queue.job('job-1')).toBeUndefined();
  });

  it('ack "manual": the job goes back to the front of ready, and nothing is logged as lost', async () => {
    const { broker, baseUrl, parked, lines } = await start();
    const queue = await broker.queue('gone-manual');
    await queue.publish({ id: 'job-1', payload: 'p' });
    await cutReceive(parked, `${baseUrl}/v1/queues/gone-manual/receive`, { wait: 5000 });
    const [released] = await linesOf(lines, 'released, client gone', 1);
    expect(released).toMatchObject({ queue: 'gone-manual', jobId: 'job-1', token: 1 });
    expect(lines.filter((line) => line.msg === LOST)).toEqual([]);
    expect(await queue.stats()).toMatchObject({ ready: 1, active: 0, unworked: 1 });
  });
});
