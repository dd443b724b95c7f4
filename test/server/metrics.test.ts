import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEAD_LETTER_KINDS } from '../../src/core/index.js';
import { call, startTestServer, type TestServer } from './helpers.js';

let server: TestServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

function api(method: string, path: string, body?: unknown, apiKey?: string) {
  return call((server as TestServer).baseUrl, method, path, {
    ...(body === undefined ? {} : { body }),
    ...(apiKey === undefined ? {} : { apiKey }),
  });
}

describe('/metrics documented', () => {
  it('every metric a server with a busy queue exports, and every job state, is in docs/operations.md', async () => {
    server = await startTestServer();
    await api('PUT', '/v1/queues/docs', {});
    await api('POST', '/v1/queues/docs/jobs/batch', { jobs: [{ id: 'a' }, { id: 'b' }] });
    await api('POST', '/v1/queues/docs/receive', { max: 1 });
    const text = (await api('GET', '/metrics')).body as string;
    const docs = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    const families = [...text.matchAll(/^# TYPE (leaseq_\w+) /gm)].map((match) => match[1]);
    expect(families.length).toBeGreaterThan(20);
    for (const family of families) expect(docs, family).toContain(`\`${family}`);
    const states = [...text.matchAll(/^leaseq_jobs\{[^}]*state="(\w+)"/gm)].map((m) => m[1]);
    expect(states.length).toBeGreaterThan(3);
    const jobsRow = docs.split('\n').find((line) => line.startsWith('| `leaseq_jobs{'));
    for (const state of states) expect(jobsRow, state).toContain(`\`${state}\``);
  });
});

describe('/metrics HTTP requests', () => {
  it('counts a request refused before routing (a malformed URL) as unmatched, with its status', async () => {
    server = await startTestServer();
    const bad = await api('GET', '/v1/queues/x%ZZ/stats');
    expect(bad.status).toBe(400);
    expect(await api('GET', '/nowhere')).toMatchObject({ status: 404 });
    const text = (await api('GET', '/metrics')).body as string;
    const unmatched = (status: number) =>
      text
        .split('\n')
        .find((line) =>
          line.startsWith(
            `leaseq_http_requests_total{method="GET",route="unmatched",status="${status}"}`,
          ),
        );
    expect(unmatched(400)).toMatch(/ 1$/);
    expect(unmatched(404)).toMatch(/ 1$/);
  });
});

describe('/metrics dead-letter series', () => {
  it('R17 distinct free-text reasons make no new series: one per reason kind, the text stays on the job', async () => {
    server = await startTestServer();
    await api('PUT', '/v1/queues/cards', {});
    const count = 60;
    await api('POST', '/v1/queues/cards/jobs/batch', {
      jobs: Array.from({ length: count }, (_, index) => ({ id: `c${index}` })),
    });
    const { deliveries } = (await api('POST', '/v1/queues/cards/receive', { max: count })).body;
    const entries = deliveries.map((delivery: { receipt: string }, index: number) => ({
      receipt: delivery.receipt,
      requeue: false,
      reason: `declined by issuer ${index}`,
    }));
    await api('POST', '/v1/queues/cards/nack/batch', { entries });
    const text = (await api('GET', '/metrics')).body as string;
    const series = text.split('\n').filter((line) => line.startsWith('leaseq_dead_letters_total{'));
    // Every kind has its series from the start (0 until its first), so increase() sees the first.
    expect(series).toEqual(
      DEAD_LETTER_KINDS.map(
        (kind) =>
          `leaseq_dead_letters_total{queue="cards",reason="${kind}"} ${kind === 'rejected' ? count : 0}`,
      ),
    );
    expect((await api('GET', '/v1/queues/cards/stats')).body.deadLetters).toEqual({
      rejected: count,
    });
    expect((await api('GET', '/v1/queues/cards/jobs/c9')).body.reason).toBe('declined by issuer 9');
  });
});

describe('/metrics per key', () => {
  const ADMIN = 'admin-key-0123456789';
  const SHOP = 'shop-key-0123456789';
  const KEYS = [
    { name: 'admin', key: ADMIN, allow: [{ queues: '*', actions: ['admin' as const] }] },
    { name: 'shop', key: SHOP, allow: [{ queues: 'orders-*', actions: ['publish' as const] }] },
  ];

  it('shows a key only the queues it may see, as the queue list and stats do', async () => {
    server = await startTestServer({ keys: KEYS });
    await api('PUT', '/v1/queues/orders-eu', {}, ADMIN);
    await api('PUT', '/v1/queues/payroll', {}, ADMIN);
    const shop = (await api('GET', '/metrics', undefined, SHOP)).body as string;
    expect(shop).toContain('leaseq_jobs{queue="orders-eu",state="ready"} 0');
    expect(shop).not.toContain('payroll');
    const listed = (await api('GET', '/v1/queues', undefined, SHOP)).body.queues.map(
      (queue: { name: string }) => queue.name,
    );
    expect(listed).toEqual(['orders-eu']);
    const admin = (await api('GET', '/metrics', undefined, ADMIN)).body as string;
    expect(admin).toContain('leaseq_jobs{queue="payroll",state="ready"} 0');
    expect(admin).toContain('leaseq_jobs{queue="orders-eu",state="ready"} 0');
    // The shop's next scrape still hides what the admin's scrape showed.
    expect((await api('GET', '/metrics', undefined, SHOP)).body).not.toContain('payroll');
    expect((await api('GET', '/metrics')).status).toBe(401);
  });
});

describe('/metrics queue counters come from the storage', () => {
  it('survive a restart over the same SQLite file, and their help text says what they count', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-metrics-'));
    try {
      const url = `sqlite:${join(dir, 'leaseq.db')}`;
      server = await startTestServer({ url });
      await api('PUT', '/v1/queues/kept', {});
      await api('POST', '/v1/queues/kept/jobs/batch', { jobs: [{ id: 'a' }, { id: 'b' }] });
      await server.close();
      server = await startTestServer({ url });
      const text = (await api('GET', '/metrics')).body as string;
      expect(text).toContain('leaseq_published_total{queue="kept"} 2');
      const help = text
        .split('\n')
        .find((line) => line.startsWith('# HELP leaseq_published_total'));
      expect(help).toContain('read from the storage');
      expect(help).toContain('the same on every server sharing it');
    } finally {
      await server?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('/metrics while queues come and go', () => {
  it('a queue deleted between the list and its figures is left out of the scrape, not a 404 of it', async () => {
    server = await startTestServer();
    await api('PUT', '/v1/queues/stays', {});
    await api('PUT', '/v1/queues/goes', {});
    const { broker } = server;
    const list = broker.listQueues.bind(broker);
    let deleteOnce = true;
    broker.listQueues = async () => {
      const infos = await list();
      if (deleteOnce) {
        deleteOnce = false;
        await broker.deleteQueue('goes');
      }
      return infos;
    };
    const answer = await api('GET', '/metrics');
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('leaseq_jobs{queue="stays",state="ready"} 0');
    expect(answer.body).not.toContain('queue="goes"');
  });
});

describe('/metrics and /v1/stats over many queues', () => {
  it('list the queues once per answer, also for queues this server has not opened yet', async () => {
    server = await startTestServer();
    const { broker } = server;
    // Made by another process sharing the storage, or before a restart: not opened here yet.
    for (let index = 0; index < 30; index++) await broker.queue(`many-${index}`);
    const list = broker.listQueues.bind(broker);
    let lists = 0;
    broker.listQueues = () => {
      lists += 1;
      return list();
    };
    const metrics = await api('GET', '/metrics');
    expect(metrics.body).toContain('leaseq_jobs{queue="many-29",state="ready"} 0');
    expect(lists).toBe(1);
    lists = 0;
    for (let index = 30; index < 60; index++) await broker.queue(`many-${index}`);
    const stats = await api('GET', '/v1/stats');
    expect(stats.body.queues).toHaveLength(60);
    expect(lists).toBe(1);
  });
});
