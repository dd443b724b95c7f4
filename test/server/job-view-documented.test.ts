import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Broker } from '../../src/broker/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';

type App = Awaited<ReturnType<typeof createApp>>;

/** The text of http-api.md's section on one job, from its heading to the next. */
function jobSection(): string {
  const page = readFileSync(new URL('../../docs/http-api.md', import.meta.url), 'utf8');
  const start = page.indexOf('### `GET /v1/queues/{name}/jobs/{id}`');
  expect(start).toBeGreaterThan(-1);
  const end = page.indexOf('\n### ', start + 1);
  return page.slice(start, end);
}

/** Fields the section names in words ("the payload", "the live token and deadline"). */
const IN_WORDS = new Set(['id', 'state', 'payload', 'deliveryCount', 'history']);

describe('GET /v1/queues/{name}/jobs/{id} as http-api.md describes it', () => {
  let broker: Broker;
  let app: App;
  const call = async (method: 'GET' | 'POST' | 'PUT', url: string, body?: object) => {
    const answer = await app.inject({
      method,
      url,
      ...(body === undefined ? {} : { payload: body }),
    });
    expect(answer.statusCode, answer.body).toBeLessThan(300);
    return answer.json();
  };

  beforeAll(async () => {
    broker = await open('memory:');
    app = await createApp({ broker, receiptSecret: 'test-secret-of-at-least-32-characters' });
  });
  afterAll(async () => {
    await app.close();
    await broker.close();
  });

  it('names every field a job of any state answers with', async () => {
    await call('PUT', '/v1/queues/jobs-q', {});
    await call('PUT', '/v1/queues/jobs-src', { deadLetterQueue: 'jobs-q' });
    const far = Date.now() + 86_400_000;
    await call('POST', '/v1/queues/jobs-q/jobs', {
      id: 'a',
      priority: 9,
      group: 'g',
      expiresAt: far,
    });
    await call('POST', '/v1/queues/jobs-q/jobs', { id: 'b', delay: 60_000 });
    await call('POST', '/v1/queues/jobs-q/jobs', { id: 'c' });
    await call('POST', '/v1/queues/jobs-q/receive', { max: 1 });
    await call('POST', '/v1/queues/jobs-q/jobs/c/cancel', {});
    await call('POST', '/v1/queues/jobs-src/jobs', { id: 'd' });
    const { deliveries } = await call('POST', '/v1/queues/jobs-src/receive', {});
    await call('POST', '/v1/queues/jobs-src/nack', {
      receipt: deliveries[0].receipt,
      requeue: false,
    });
    const views = await Promise.all(
      ['a', 'b', 'c', 'd'].map((id) => call('GET', `/v1/queues/jobs-q/jobs/${id}`)),
    );
    expect(views.map((view) => view.state)).toEqual(['active', 'delayed', 'dead', 'ready']);
    const fields = [...new Set(views.flatMap((view) => Object.keys(view)))];
    expect(fields).toEqual(expect.arrayContaining(['priority', 'reason', 'deadAt', 'origin']));
    const section = jobSection();
    expect(
      fields.filter((field) => !IN_WORDS.has(field) && !section.includes(`\`${field}\``)),
    ).toEqual([]);
  });
});
