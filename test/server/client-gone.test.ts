import { afterEach, describe, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/index.js';
import { cutWhileParked, startRacyServer } from './racy-broker.js';

/**
 * R33 over HTTP and SQS: a long poll whose job is reserved just as its client goes away. The
 * server cannot send that delivery to anyone, so it gives it back unworked: the job is ready
 * again at once, its deliveryCount as before, counted as `unworked`.
 *
 * The race is made certain by a broker whose waiting receives answer only once the request's
 * signal says the client left, and then reserve what is ready: what a receive woken by a
 * publish at that moment would answer (racy-broker.ts).
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

/** Until the queue counts a give-back (the server does it after the request is gone). */
async function givenBack(queue: Queue) {
  for (let tries = 0; tries < 200; tries++) {
    const stats = await queue.stats();
    if (stats.unworked > 0) return stats;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the delivery of a client that left was never given back');
}

describe('R33 a long poll reserved as its client leaves gives its job back unworked', () => {
  it('over HTTP (POST /v1/queues/{name}/receive with wait)', async () => {
    const { broker, baseUrl, parked } = await start();
    const queue = await broker.queue('left');
    await queue.publish({ id: 'job-1', payload: 'p' });
    await cutWhileParked(parked, `${baseUrl}/v1/queues/left/receive`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ wait: 5000 }),
    });
    const stats = await givenBack(queue);
    expect(stats).toMatchObject({ ready: 1, active: 0, unworked: 1 });
    expect(await queue.job('job-1')).toMatchObject({ state: 'ready', deliveryCount: 0 });
    // Ready at once for the next consumer, as a first delivery.
    const [next] = await queue.receive();
    expect(next).toMatchObject({ id: 'job-1', deliveryCount: 1 });
  });

  it('over SQS (ReceiveMessage with WaitTimeSeconds)', async () => {
    const { broker, baseUrl, parked } = await start();
    const queue = await broker.queue('left-sqs');
    await queue.publish({ id: 'job-1', payload: 'p' });
    await cutWhileParked(parked, `${baseUrl}/sqs/`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body: new URLSearchParams({
        Version: '2012-11-05',
        Action: 'ReceiveMessage',
        QueueUrl: `${baseUrl}/sqs/000000000000/left-sqs`,
        WaitTimeSeconds: '5',
      }).toString(),
    });
    const stats = await givenBack(queue);
    expect(stats).toMatchObject({ ready: 1, active: 0, unworked: 1 });
    expect(await queue.job('job-1')).toMatchObject({ state: 'ready', deliveryCount: 0 });
  });
});
