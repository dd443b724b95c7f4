import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;
let counter = 0;
const fresh = () => `q${++counter}`;
const api = (method: string, path: string, body?: unknown) =>
  call(server.baseUrl, method, path, body === undefined ? {} : { body });

async function queueWithJobs(ids: string[], options: Record<string, unknown> = {}) {
  const name = fresh();
  expect((await api('PUT', `/v1/queues/${name}`, options)).status).toBe(201);
  if (ids.length > 0) {
    const jobs = ids.map((id) => ({ id, payload: { id } }));
    expect((await api('POST', `/v1/queues/${name}/jobs/batch`, { jobs })).status).toBe(200);
  }
  return name;
}

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server.close();
});

describe('queues', () => {
  it('creates (201), opens (200), refuses other options (409), updates, lists and deletes', async () => {
    const name = fresh();
    const created = await api('PUT', `/v1/queues/${name}`, { visibility: 1000, maxLease: null });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      name,
      created: true,
      options: {
        visibility: 1000,
        prefetch: null,
        maxDeliveries: 10,
        maxLease: null,
        dedupWindow: 0,
      },
    });
    expect((await api('PUT', `/v1/queues/${name}`, {})).body.created).toBe(false);
    const conflict = await api('PUT', `/v1/queues/${name}`, { visibility: 2000 });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe('CONFLICT');
    const updated = await api('PATCH', `/v1/queues/${name}`, { prefetch: 3 });
    expect(updated.body.options).toMatchObject({ visibility: 1000, prefetch: 3 });
    expect((await api('GET', `/v1/queues/${name}`)).body.options.prefetch).toBe(3);
    expect((await api('GET', '/v1/queues')).body.queues).toContainEqual({
      name,
      options: updated.body.options,
    });
    expect((await api('DELETE', `/v1/queues/${name}`)).body).toEqual({ deleted: true });
    expect((await api('DELETE', `/v1/queues/${name}`)).body).toEqual({ deleted: false });
    const gone = await api('GET', `/v1/queues/${name}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({
      error: { code: 'NOT_FOUND', message: `queue ${name} does not exist` },
    });
  });

  it('never creates a queue by using it: a missing queue is 404 everywhere', async () => {
    const name = fresh();
    for (const [method, path, body] of [
      ['POST', `/v1/queues/${name}/jobs`, {}],
      ['POST', `/v1/queues/${name}/receive`, {}],
      ['GET', `/v1/queues/${name}/stats`, undefined],
      ['GET', `/v1/queues/${name}/dead-letters`, undefined],
      ['PATCH', `/v1/queues/${name}`, { visibility: 5 }],
    ] as const) {
      const answer = await api(method, path, body);
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.body.error.code).toBe('NOT_FOUND');
    }
    expect(
      (await api('GET', '/v1/queues')).body.queues.map((q: { name: string }) => q.name),
    ).not.toContain(name);
  });
});

describe('publish, receive and settle', () => {
  it('R23 R22 publishes with a priority (0–9, else 400) and receives with ack auto', async () => {
    const name = await queueWithJobs(['a']);
    expect((await api('POST', `/v1/queues/${name}/jobs`, { id: 'b', priority: 7 })).status).toBe(
      200,
    );
    const bad = await api('POST', `/v1/queues/${name}/jobs`, { id: 'c', priority: 10 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_ARGUMENT');
    const batch = await api('POST', `/v1/queues/${name}/operations`, {
      operations: [{ type: 'publish', jobs: [{ id: 'd', priority: -1 }] }],
    });
    expect(batch.body.results[0]).toMatchObject({ ok: false, error: { code: 'INVALID_ARGUMENT' } });
    expect((await api('GET', `/v1/queues/${name}/jobs/b`)).body).toMatchObject({ priority: 7 });
    const received = await api('POST', `/v1/queues/${name}/receive`, { max: 5, ack: 'auto' });
    expect(received.body.deliveries.map((d: { id: string }) => d.id)).toEqual(['b', 'a']);
    const acked = await api('POST', `/v1/queues/${name}/ack`, {
      receipt: received.body.deliveries[0].receipt,
    });
    expect(acked.body).toEqual({ acked: false });
    const stats = (await api('GET', `/v1/queues/${name}/stats`)).body;
    expect(stats).toMatchObject({ ready: 0, active: 0, autoAcked: 2, staleAcks: 1 });
  });

  it('publishes one job or a batch, with duplicates reported (R4, R5)', async () => {
    const name = await queueWithJobs([]);
    expect((await api('POST', `/v1/queues/${name}/jobs`, { id: 'a', payload: [1] })).body).toEqual({
      id: 'a',
      duplicate: false,
    });
    const batch = await api('POST', `/v1/queues/${name}/jobs/batch`, {
      jobs: [{ id: 'a' }, { payload: 'x', delay: 60_000 }],
    });
    expect(batch.body.results).toEqual([
      { id: 'a', duplicate: true },
      { id: expect.any(String), duplicate: false },
    ]);
    const job = await api('GET', `/v1/queues/${name}/jobs/${batch.body.results[1].id}`);
    expect(job.body).toMatchObject({ state: 'delayed', payload: 'x', deliveryCount: 0 });
  });

  it('hands out receipts with fencing tokens; ack answers false for a stale receipt (R6, R7, R8)', async () => {
    const name = await queueWithJobs(['a', 'b']);
    const received = await api('POST', `/v1/queues/${name}/receive`, {
      max: 2,
      visibility: 60_000,
    });
    const [a, b] = received.body.deliveries;
    expect(a).toMatchObject({ id: 'a', token: 1, deliveryCount: 1, redelivered: false });
    expect(b).toMatchObject({ id: 'b', token: 2, payload: { id: 'b' } });
    expect(a.receipt).toMatch(/^[A-Za-z0-9_-]+$/);
    expect((await api('POST', `/v1/queues/${name}/ack`, { receipt: a.receipt })).body).toEqual({
      acked: true,
    });
    expect((await api('POST', `/v1/queues/${name}/ack`, { receipt: a.receipt })).body).toEqual({
      acked: false,
    });
    const batch = await api('POST', `/v1/queues/${name}/ack/batch`, {
      receipts: [b.receipt, a.receipt],
    });
    expect(batch.body.results).toEqual([{ acked: true }, { acked: false }]);
    const stats = (await api('GET', `/v1/queues/${name}/stats`)).body;
    expect(stats).toMatchObject({ ready: 0, active: 0, acks: 2, staleAcks: 2, deliveries: 2 });
  });

  it('nacks to requeue, delay or dead-letter, with a result per entry (R9, R14)', async () => {
    const name = await queueWithJobs(['a', 'b', 'c']);
    const [a, b, c] = (await api('POST', `/v1/queues/${name}/receive`, { max: 3 })).body.deliveries;
    expect((await api('POST', `/v1/queues/${name}/nack`, { receipt: a.receipt })).body).toEqual({
      nacked: true,
    });
    const batch = await api('POST', `/v1/queues/${name}/nack/batch`, {
      entries: [
        { receipt: b.receipt, delay: 60_000 },
        { receipt: c.receipt, requeue: false, reason: 'poison' },
        { receipt: a.receipt },
      ],
    });
    expect(batch.body.results).toEqual([{ nacked: true }, { nacked: true }, { nacked: false }]);
    const view = (await api('GET', `/v1/queues/${name}/inspect`)).body;
    expect(view.ready).toEqual(['a']);
    expect(view.delayed.map((d: { id: string }) => d.id)).toEqual(['b']);
    expect(view.dead).toEqual([{ id: 'c', reason: 'poison', deliveryCount: 1 }]);
  });

  it('extends a live delivery within maxLease, and answers null for a stale one (R10)', async () => {
    const name = await queueWithJobs(['a', 'b'], { maxLease: 120_000 });
    const [a, b] = (await api('POST', `/v1/queues/${name}/receive`, { max: 2, visibility: 1000 }))
      .body.deliveries;
    const extended = await api('POST', `/v1/queues/${name}/extend`, {
      receipt: a.receipt,
      visibility: 60_000,
    });
    expect(extended.body.deadline).toBeGreaterThanOrEqual(a.deadline - 1000 + 60_000);
    const capped = await api('POST', `/v1/queues/${name}/extend/batch`, {
      entries: [
        { receipt: a.receipt, visibility: 1_000_000 },
        { receipt: b.receipt, visibility: 5000 },
      ],
    });
    expect(capped.body.results[0]).toEqual({ deadline: a.deadline - 1000 + 120_000 });
    await api('POST', `/v1/queues/${name}/ack`, { receipt: b.receipt });
    const stale = await api('POST', `/v1/queues/${name}/extend`, {
      receipt: b.receipt,
      visibility: 10,
    });
    expect(stale.body).toEqual({ deadline: null });
    expect((await api('GET', `/v1/queues/${name}/stats`)).body).toMatchObject({
      extensions: 3,
      staleExtends: 1,
    });
  });

  it('answers a long poll as soon as a job is published, not at the end of the wait', async () => {
    const name = await queueWithJobs([]);
    const started = Date.now();
    const poll = api('POST', `/v1/queues/${name}/receive`, { wait: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await api('POST', `/v1/queues/${name}/jobs`, { id: 'late' });
    const answer = await poll;
    const elapsed = Date.now() - started;
    expect(answer.body.deliveries.map((d: { id: string }) => d.id)).toEqual(['late']);
    expect(elapsed).toBeLessThan(2000);
  });

  it('answers an unfulfilled long poll empty when its wait ends', async () => {
    const name = await queueWithJobs([]);
    const started = Date.now();
    const answer = await api('POST', `/v1/queues/${name}/receive`, { wait: 300 });
    expect(answer.body).toEqual({ deliveries: [] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });
});

describe('sessions', () => {
  it('opens, heartbeats, acks up to a token within the session only, and closes (R11, R16)', async () => {
    const name = await queueWithJobs(['a', 'b', 'c']);
    const s1 = (await api('POST', `/v1/queues/${name}/sessions`, { prefetch: 2 })).body.session;
    const s2 = (await api('POST', `/v1/queues/${name}/sessions`, { timeout: null })).body.session;
    const one = (await api('POST', `/v1/queues/${name}/receive`, { max: 5, session: s1 })).body
      .deliveries;
    expect(one.map((d: { id: string }) => d.id)).toEqual(['a', 'b']);
    const two = (await api('POST', `/v1/queues/${name}/receive`, { session: s2 })).body.deliveries;
    expect(two.map((d: { id: string }) => d.id)).toEqual(['c']);
    expect(
      (await api('POST', `/v1/queues/${name}/sessions/heartbeat`, { session: s1 })).body,
    ).toEqual({});
    const acked = await api('POST', `/v1/queues/${name}/sessions/ack-up-to`, {
      session: s1,
      token: 3,
    });
    expect(acked.body).toEqual({ acked: 2 });
    const nacked = await api('POST', `/v1/queues/${name}/sessions/nack-up-to`, {
      session: s2,
      token: 3,
      requeue: false,
    });
    expect(nacked.body).toEqual({ nacked: 1 });
    expect((await api('POST', `/v1/queues/${name}/sessions/close`, { session: s1 })).body).toEqual({
      released: 0,
    });
    const ended = await api('POST', `/v1/queues/${name}/sessions/heartbeat`, { session: s1 });
    expect(ended.status).toBe(410);
    expect(ended.body.error.code).toBe('SESSION_CLOSED');
  });

  it('refuses a session handle of another queue as an unknown session', async () => {
    const one = await queueWithJobs([]);
    const two = await queueWithJobs([]);
    const handle = (await api('POST', `/v1/queues/${one}/sessions`, {})).body.session;
    const answer = await api('POST', `/v1/queues/${two}/sessions/heartbeat`, { session: handle });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toEqual({
      code: 'INVALID_ARGUMENT',
      message: `unknown session for queue ${two}`,
    });
  });
});

describe('dead letters and jobs', () => {
  it('lists dead letters with history, redrives and purges them (R13, R14)', async () => {
    const name = await queueWithJobs(['a', 'b'], { maxDeliveries: 1 });
    const deliveries = (await api('POST', `/v1/queues/${name}/receive`, { max: 2 })).body
      .deliveries;
    for (const delivery of deliveries) {
      await api('POST', `/v1/queues/${name}/nack`, { receipt: delivery.receipt });
    }
    const dead = (await api('GET', `/v1/queues/${name}/dead-letters`)).body.deadLetters;
    expect(dead.map((d: { id: string; reason: string }) => [d.id, d.reason])).toEqual([
      ['a', 'max-deliveries'],
      ['b', 'max-deliveries'],
    ]);
    expect(dead[0].history).toEqual([expect.objectContaining({ token: 1, outcome: 'requeued' })]);
    expect(dead[0].payload).toEqual({ id: 'a' });
    const redriven = await api('POST', `/v1/queues/${name}/dead-letters/redrive`, {
      ids: ['a', 'zz'],
    });
    expect(redriven.body).toEqual({ redriven: 1 });
    const job = (await api('GET', `/v1/queues/${name}/jobs/a`)).body;
    expect(job).toMatchObject({ id: 'a', state: 'ready', deliveryCount: 0 });
    expect(job.history).toHaveLength(1);
    expect((await api('POST', `/v1/queues/${name}/dead-letters/purge`, {})).body).toEqual({
      purged: 1,
    });
    const missing = await api('GET', `/v1/queues/${name}/jobs/b`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('NOT_FOUND');
  });

  it('R34 lists dead letters a page at a time: ?limit and ?after, with next until the last page', async () => {
    const name = await queueWithJobs(['a', 'b', 'c'], { maxDeliveries: 1 });
    const deliveries = (await api('POST', `/v1/queues/${name}/receive`, { max: 3 })).body
      .deliveries;
    for (const delivery of deliveries) {
      await api('POST', `/v1/queues/${name}/nack`, { receipt: delivery.receipt });
    }
    const ids = (body: { deadLetters: { id: string }[] }) => body.deadLetters.map((d) => d.id);
    const first = (await api('GET', `/v1/queues/${name}/dead-letters?limit=2`)).body;
    expect(ids(first)).toEqual(['a', 'b']);
    expect(first.next).toEqual(expect.any(String));
    const last = await api('GET', `/v1/queues/${name}/dead-letters?limit=2&after=${first.next}`);
    expect(last.status).toBe(200);
    expect(last.body).toEqual({ deadLetters: [expect.objectContaining({ id: 'c' })] });
    // Without a limit, a page of up to 100.
    expect(ids((await api('GET', `/v1/queues/${name}/dead-letters`)).body)).toEqual([
      'a',
      'b',
      'c',
    ]);
    for (const [query, message] of [
      ['limit=0', 'limit must be an integer from 1 to 1000, got 0'],
      ['limit=1001', 'limit must be an integer from 1 to 1000, got 1001'],
      ['limit=ten', 'querystring.limit must match pattern "^[0-9]{1,16}$"'],
      ['after=x', 'after must be the next of an earlier page, got "x"'],
      ['page=2', 'querystring has an unknown field "page"'],
    ] as const) {
      const refused = await api('GET', `/v1/queues/${name}/dead-letters?${query}`);
      expect(refused.status, query).toBe(400);
      expect(refused.body.error).toEqual({ code: 'INVALID_ARGUMENT', message });
    }
  });

  it('finds a job whose id needs escaping in a URL, up to the longest id', async () => {
    for (const id of ['a/b c?d#e%f', 'é'.repeat(256)]) {
      const name = await queueWithJobs([id]);
      const job = await api('GET', `/v1/queues/${name}/jobs/${encodeURIComponent(id)}`);
      expect(job.body).toMatchObject({ id, state: 'ready' });
    }
  });
});

describe('the OpenAPI document', () => {
  it('lists exactly the routes the server answers, with the schemas it validates with', async () => {
    const doc = (await api('GET', '/openapi.json')).body;
    expect(doc.openapi).toBe('3.1.0');
    const operations = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    // queues 5, jobs 4, deliveries 7, operations 1, sessions 5, dead letters 3, observability 6,
    // overview 4, schedules 3
    expect(operations).toHaveLength(38);
    expect(new Set(operations).size).toBe(operations.length);
    // Every documented operation is routed: none answers "no such route".
    for (const operation of operations) {
      const [method, path] = operation.split(' ') as [string, string];
      const concrete = path.replace('{name}', 'missing').replace('{id}', 'x');
      const answer = await call(
        server.baseUrl,
        method,
        concrete,
        method === 'GET' || method === 'DELETE' ? {} : { body: {} },
      );
      expect(answer.body?.error?.message, operation).not.toBe('no such route');
    }
    expect(doc.paths['/v1/queues/{name}/dead-letters'].get.parameters).toEqual([
      expect.objectContaining({ name: 'name', in: 'path', required: true }),
      expect.objectContaining({ name: 'limit', in: 'query', required: false }),
      expect.objectContaining({ name: 'after', in: 'query', required: false }),
      expect.objectContaining({ name: 'payload', in: 'query', required: false }),
    ]);
    const publish = doc.paths['/v1/queues/{name}/jobs'].post;
    expect(publish.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      properties: { delay: { type: 'integer', minimum: 0 } },
    });
    expect(publish.responses['413']).toEqual({ $ref: '#/components/responses/Error' });
    // R31: a publish beyond a queue's maxLength is 409 QUEUE_FULL.
    expect(publish.responses['409']).toEqual({ $ref: '#/components/responses/Error' });
    expect(publish.requestBody.content['application/json'].schema.properties).toMatchObject({
      expiresAt: { type: 'integer', minimum: 0 },
    });
  });
});
