import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import {
  call,
  captureLogs,
  startTestServer,
  type TestServer,
  withWrappedQueues,
} from './helpers.js';

let server: TestServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A logger whose JSON lines land in `lines`. */

describe('/metrics', () => {
  it('exposes every R17 figure per queue, read at scrape time, and HTTP traffic', async () => {
    server = await startTestServer();
    const api = (method: string, path: string, body?: unknown) =>
      call((server as TestServer).baseUrl, method, path, body === undefined ? {} : { body });
    await api('PUT', '/v1/queues/orders', { maxDeliveries: 1 });
    await api('POST', '/v1/queues/orders/jobs/batch', {
      jobs: [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'a' }],
    });
    const [a, b] = (await api('POST', '/v1/queues/orders/receive', { max: 2 })).body.deliveries;
    await api('POST', '/v1/queues/orders/extend', { receipt: a.receipt, visibility: 60_000 });
    await api('POST', '/v1/queues/orders/ack', { receipt: a.receipt });
    await api('POST', '/v1/queues/orders/ack', { receipt: a.receipt });
    await api('POST', '/v1/queues/orders/nack', {
      receipt: b.receipt,
      requeue: false,
      reason: 'poison',
    });
    const answer = await api('GET', '/metrics');
    expect(answer.headers.get('content-type')).toContain('text/plain');
    const text = answer.body as string;
    for (const line of [
      'leaseq_jobs{queue="orders",state="ready"} 1',
      'leaseq_jobs{queue="orders",state="delayed"} 0',
      'leaseq_jobs{queue="orders",state="active"} 0',
      'leaseq_jobs{queue="orders",state="dead"} 1',
      'leaseq_sessions{queue="orders"} 0',
      'leaseq_published_total{queue="orders"} 3',
      'leaseq_duplicate_publishes_total{queue="orders"} 1',
      'leaseq_deliveries_total{queue="orders"} 2',
      'leaseq_redeliveries_total{queue="orders"} 0',
      'leaseq_acks_total{queue="orders"} 1',
      'leaseq_nacks_total{queue="orders"} 1',
      'leaseq_expiries_total{queue="orders"} 0',
      'leaseq_session_releases_total{queue="orders"} 0',
      'leaseq_extensions_total{queue="orders"} 1',
      'leaseq_stale_acks_total{queue="orders"} 1',
      'leaseq_stale_nacks_total{queue="orders"} 0',
      'leaseq_stale_extends_total{queue="orders"} 0',
      'leaseq_redriven_total{queue="orders"} 0',
      'leaseq_purged_total{queue="orders"} 0',
      'leaseq_dead_letters_total{queue="orders",reason="rejected"} 1',
      'leaseq_processed_total{queue="orders"} 1',
      'leaseq_http_requests_total{method="POST",route="/v1/queues/:name/ack",status="200"} 2',
    ]) {
      expect(text).toContain(line);
    }
    expect(text).toMatch(/leaseq_oldest_ready_age_seconds\{queue="orders"\} [\d.e-]+/);
    expect(text).toMatch(/leaseq_processing_seconds_total\{queue="orders"\} [\d.e-]+/);
    expect(text).toMatch(/leaseq_processing_max_seconds\{queue="orders"\} [\d.e-]+/);
    expect(text).toMatch(
      /leaseq_http_request_duration_seconds_count\{method="POST",route="\/v1\/queues\/:name\/receive"\} 1/,
    );
    // A deleted queue disappears from the next scrape.
    await api('DELETE', '/v1/queues/orders');
    expect((await api('GET', '/metrics')).body).not.toContain('queue="orders"');
  });
});

describe('health and readiness', () => {
  it('answers /healthz while up, and /readyz 503 once the storage is gone', async () => {
    server = await startTestServer();
    const { baseUrl, broker } = server;
    expect((await call(baseUrl, 'GET', '/healthz')).body).toEqual({ status: 'ok' });
    expect((await call(baseUrl, 'GET', '/readyz')).body).toEqual({ status: 'ready' });
    await broker.close();
    const answer = await call(baseUrl, 'GET', '/readyz');
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe('CLOSED');
    expect((await call(baseUrl, 'GET', '/healthz')).status).toBe(200);
  });

  it.each(['memory:', 'sqlite'])(
    '/readyz reads one row of the storage (%s), never the list of every queue',
    async (kind) => {
      let url = kind;
      if (kind === 'sqlite') {
        const dir = mkdtempSync(join(tmpdir(), 'leaseq-readyz-'));
        onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
        url = `sqlite:${join(dir, 'q.db')}`;
      }
      server = await startTestServer({ url });
      const { baseUrl, broker } = server;
      for (let n = 0; n < 20; n++) await broker.queue(`q${n}`);
      let listed = 0;
      const listQueues = broker.listQueues.bind(broker);
      broker.listQueues = async () => {
        listed += 1;
        return listQueues();
      };
      expect((await call(baseUrl, 'GET', '/readyz')).body).toEqual({ status: 'ready' });
      expect(listed).toBe(0);
      await broker.close();
      const answer = await call(baseUrl, 'GET', '/readyz');
      expect(answer.status).toBe(503);
      expect(answer.body.error.code).toBe('CLOSED');
      expect(listed).toBe(0);
    },
  );
});

describe('logs', () => {
  it('with API keys, the lines of a request name the key it came with, never its secret', async () => {
    const { lines, logger } = captureLogs();
    const secret = 'worker-key-0123456789';
    server = await startTestServer({
      logger,
      keys: [{ name: 'billing-worker', key: secret, allow: [{ queues: '*', actions: ['admin'] }] }],
    });
    const as = (method: string, path: string, body?: unknown) =>
      call((server as TestServer).baseUrl, method, path, {
        apiKey: secret,
        ...(body === undefined ? {} : { body }),
      });
    await as('PUT', '/v1/queues/keyed', {});
    await as('POST', '/v1/queues/keyed/jobs', { id: 'a' });
    const { body } = await as('POST', '/v1/queues/keyed/receive', {});
    await as('POST', '/v1/queues/keyed/ack', { receipt: body.deliveries[0].receipt });
    const acked = lines.find((line) => line.msg === 'acked');
    expect(acked).toMatchObject({ key: 'billing-worker', queue: 'keyed', jobId: 'a' });
    expect(JSON.stringify(lines)).not.toContain(secret);
  });

  it('carries the job id and the token on every delivery outcome (R17), never the receipt', async () => {
    const { lines, logger } = captureLogs();
    server = await startTestServer({ logger });
    const api = (path: string, body: unknown) =>
      call((server as TestServer).baseUrl, 'POST', path, { body });
    await call(server.baseUrl, 'PUT', '/v1/queues/q', { body: {} });
    await api('/v1/queues/q/jobs/batch', { jobs: [{ id: 'a' }, { id: 'b' }, { id: 'c' }] });
    const [a, b, c] = (await api('/v1/queues/q/receive', { max: 3 })).body.deliveries;
    await api('/v1/queues/q/extend', { receipt: a.receipt, visibility: 1000 });
    await api('/v1/queues/q/ack', { receipt: a.receipt });
    await api('/v1/queues/q/ack', { receipt: a.receipt });
    await api('/v1/queues/q/nack', { receipt: b.receipt });
    await api('/v1/queues/q/nack', { receipt: c.receipt, requeue: false });
    const outcomes = lines
      .filter((line) => line.jobId !== undefined)
      .map((line) => [line.msg, line.jobId, line.token]);
    expect(outcomes).toEqual([
      ['delivered', 'a', 1],
      ['delivered', 'b', 2],
      ['delivered', 'c', 3],
      ['extended', 'a', 1],
      ['acked', 'a', 1],
      ['stale ack', 'a', 1],
      ['requeued', 'b', 2],
      ['dead-lettered', 'c', 3],
    ]);
    const all = JSON.stringify(lines);
    for (const delivery of [a, b, c]) expect(all).not.toContain(delivery.receipt);
  });

  it('logs sessions opened, settled and closed through an operation batch as the session routes do', async () => {
    const { lines, logger } = captureLogs();
    server = await startTestServer({ logger });
    const api = (path: string, body: unknown, method = 'POST') =>
      call((server as TestServer).baseUrl, method, path, { body });
    const batch = async (operations: unknown[]) =>
      (await api('/v1/queues/s/operations', { operations })).body.results;
    await api('/v1/queues/s', {}, 'PUT');
    await api('/v1/queues/s/jobs/batch', { jobs: [{ id: 'a' }, { id: 'b' }, { id: 'c' }] });
    const [opened] = await batch([{ type: 'openSession' }]);
    const session = opened.value;
    const [reserved] = await batch([{ type: 'reserve', max: 3, session }]);
    const tokens = reserved.value.map((delivery: { token: number }) => delivery.token);
    await batch([
      { type: 'ackUpTo', session, token: tokens[0] },
      { type: 'nackUpTo', session, token: tokens[1], requeue: false },
      { type: 'closeSession', session },
    ]);
    const sessionLines = lines
      .filter((line) => line.session !== undefined)
      .map(({ msg, acked, nacked, released }) => ({ msg, acked, nacked, released }));
    expect(sessionLines).toEqual([
      { msg: 'session opened' },
      { msg: 'acked up to', acked: 1 },
      { msg: 'nacked up to', nacked: 1 },
      { msg: 'session closed', released: 1 },
    ]);
    expect(
      new Set(lines.filter((line) => line.session !== undefined).map((l) => l.session)).size,
    ).toBe(1);
  });

  it.each(['memory:', 'sqlite'])(
    'logs a nack that asked for a requeue as dead-lettered when its delivery was the last (R13), on %s',
    async (storage) => {
      const { lines, logger } = captureLogs();
      const dir = mkdtempSync(join(tmpdir(), 'leaseq-nack-log-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const url = storage === 'sqlite' ? `sqlite:${join(dir, 'q.db')}` : storage;
      server = await startTestServer({ logger, url });
      const api = (path: string, body: unknown, method = 'POST') =>
        call((server as TestServer).baseUrl, method, path, { body });
      await api('/v1/queues/dlq', {}, 'PUT');
      await api('/v1/queues/once', { maxDeliveries: 1 }, 'PUT');
      await api('/v1/queues/moved', { maxDeliveries: 1, deadLetterQueue: 'dlq' }, 'PUT');
      await api('/v1/queues/twice', { maxDeliveries: 2 }, 'PUT');
      const receipts: Record<string, string> = {};
      for (const name of ['once', 'moved', 'twice']) {
        await api(`/v1/queues/${name}/jobs`, { id: name });
        receipts[name] = (await api(`/v1/queues/${name}/receive`, {})).body.deliveries[0].receipt;
      }
      // The single route, and an operation batch (what the remote client and `leaseq nack` send).
      await api('/v1/queues/once/nack', { receipt: receipts.once });
      await api('/v1/queues/moved/operations', {
        operations: [{ type: 'nack', receipt: receipts.moved }],
      });
      await api('/v1/queues/twice/operations', {
        operations: [{ type: 'nack', receipt: receipts.twice }],
      });
      const nacks = lines
        .filter((line) => line.jobId !== undefined && line.msg !== 'delivered')
        .map(({ msg, queue, jobId, reason, deadLetterQueue }) => ({
          msg,
          queue,
          jobId,
          reason,
          deadLetterQueue,
        }));
      expect(nacks).toEqual([
        { msg: 'dead-lettered', queue: 'once', jobId: 'once', reason: 'max-deliveries' },
        {
          msg: 'dead-lettered',
          queue: 'moved',
          jobId: 'moved',
          reason: 'max-deliveries',
          deadLetterQueue: 'dlq',
        },
        { msg: 'requeued', queue: 'twice', jobId: 'twice' },
      ]);
    },
  );

  it('names the dead-letter queue a rejected job moved to, and none where it stayed (R26)', async () => {
    const { lines, logger } = captureLogs();
    server = await startTestServer({ logger });
    const api = (path: string, body: unknown, method = 'POST') =>
      call((server as TestServer).baseUrl, method, path, { body });
    await api('/v1/queues/dlq', {}, 'PUT');
    await api('/v1/queues/plain', {}, 'PUT');
    await api('/v1/queues/moved', { deadLetterQueue: 'dlq' }, 'PUT');
    // An id the dead-letter queue already holds: the job cannot move there and stays.
    await api('/v1/queues/dlq/jobs', { id: 'taken' });
    for (const [name, id] of [
      ['plain', 'p'],
      ['moved', 'm'],
      ['moved', 'taken'],
    ] as const) {
      await api(`/v1/queues/${name}/jobs`, { id });
      const receipt = (await api(`/v1/queues/${name}/receive`, {})).body.deliveries[0].receipt;
      await api(`/v1/queues/${name}/nack`, { receipt, requeue: false, reason: 'bad input' });
    }
    expect((await api('/v1/queues/dlq/jobs/m', undefined, 'GET')).status).toBe(200);
    const rejects = lines
      .filter((line) => line.msg === 'dead-lettered')
      .map(({ queue, jobId, reason, deadLetterQueue }) => ({
        queue,
        jobId,
        reason,
        deadLetterQueue,
      }));
    expect(rejects).toEqual([
      { queue: 'plain', jobId: 'p', reason: 'bad input' },
      { queue: 'moved', jobId: 'm', reason: 'bad input', deadLetterQueue: 'dlq' },
      { queue: 'moved', jobId: 'taken', reason: 'bad input' },
    ]);
  });

  it('answers a nack that committed even when the read for its log line fails', async () => {
    const { lines, logger } = captureLogs();
    const real = await open('memory:');
    // The job read after the nack fails, as when its queue is deleted meanwhile.
    const broker = withWrappedQueues(real, (queue) =>
      Object.assign(Object.create(queue), {
        job: () => Promise.reject(new Error('queue deleted meanwhile')),
      }),
    );
    const app = await createApp({ broker, logger });
    const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const api = (path: string, body: unknown, method = 'POST') =>
        call(baseUrl, method, path, { body });
      await api('/v1/queues/q', {}, 'PUT');
      await api('/v1/queues/q/jobs', { id: 'a' });
      const { receipt } = (await api('/v1/queues/q/receive', {})).body.deliveries[0];
      const single = await api('/v1/queues/q/nack', { receipt });
      expect(single.status).toBe(200);
      const again = (await api('/v1/queues/q/receive', {})).body.deliveries[0];
      const batch = await api('/v1/queues/q/operations', {
        operations: [{ type: 'nack', receipt: again.receipt }],
      });
      expect(batch.status).toBe(200);
      expect(batch.body.results[0].ok).toBe(true);
      expect(
        lines.filter((line) => line.jobId === 'a' && line.msg !== 'delivered').map((l) => l.msg),
      ).toEqual(['nack outcome not read', 'nacked', 'nack outcome not read', 'nacked']);
    } finally {
      await app.close();
      await real.close();
    }
  });

  it('logs internal errors in full but tells the client only "internal error"', async () => {
    const { lines, logger } = captureLogs();
    const real = await open('memory:');
    const broker = withWrappedQueues(real, (queue) =>
      Object.assign(Object.create(queue), {
        stats: () => Promise.reject(new Error('secret detail: /var/lib/leaseq')),
      }),
    );
    const app = await createApp({ broker, logger });
    const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      await call(baseUrl, 'PUT', '/v1/queues/boom', { body: {} });
      const answer = await call(baseUrl, 'GET', '/v1/queues/boom/stats');
      expect(answer.status).toBe(500);
      expect(answer.body).toEqual({ error: { code: 'INTERNAL', message: 'internal error' } });
      expect(JSON.stringify(lines)).toContain('secret detail');
    } finally {
      await app.close();
      await real.close();
    }
  });
});
