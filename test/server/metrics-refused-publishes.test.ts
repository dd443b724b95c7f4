import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QueueFullError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { queueName } from '../conformance/engines.js';
import { type ScratchDatabase, scratchDatabase } from '../engine/postgres-scratch.js';
import { FrameClient } from '../stream/frames.js';
import { call, startTestServer, type TestServer } from './helpers.js';
import { type ServerStorage, serverStorages } from './storages.js';

/**
 * R31: a publish refused with QUEUE_FULL counts its jobs in the queue's `refused` counter,
 * kept in the storage with the other counters, whichever way the publish came: HTTP (one job,
 * a batch, an operation of a batch), a stream batch frame, the SQS endpoint, or a broker in
 * the server's own process. `/metrics` writes it for every queue from the start, at 0.
 */

// PostgreSQL in a database of its own: /metrics reads every queue of its database at the
// server's time, which would move on other test files' queues in the shared one. Created before
// the tests, not as the file is collected: Vitest runs no hook of a file whose tests are all
// filtered out, and a database created at collection was never dropped.
const storages = await serverStorages();
let scratch: ScratchDatabase | undefined;
beforeAll(async () => {
  const postgres = storages.find((storage) => storage.name === 'postgres');
  if (postgres !== undefined && postgres.skipReason === undefined) {
    scratch = await scratchDatabase('refused');
  }
});
afterAll(async () => {
  await scratch?.drop();
});

/** The URL `storage`'s tests use: for PostgreSQL, this file's own database. */
function urlOf(storage: ServerStorage): string {
  return storage.name === 'postgres' ? (scratch as ScratchDatabase).url() : storage.url;
}

let server: TestServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

function api(method: string, path: string, body?: unknown) {
  return call((server as TestServer).baseUrl, method, path, body === undefined ? {} : { body });
}

/** The value of one series of `/metrics`, or undefined when it is absent. */
async function sample(series: string): Promise<number | undefined> {
  const text = (await api('GET', '/metrics')).body as string;
  const line = text.split('\n').find((each) => each.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** A form POST to the SQS endpoint (Query protocol); its status. */
async function sqs(action: string, params: Record<string, string>): Promise<number> {
  const base = (server as TestServer).baseUrl;
  const answer = await fetch(`${base}/sqs/`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    body: new URLSearchParams({ Version: '2012-11-05', Action: action, ...params }).toString(),
  });
  await answer.text();
  return answer.status;
}

for (const storage of storages) {
  (storage.skipReason === undefined ? describe : describe.skip)(
    `leaseq_refused_publishes_total on ${storage.name}`,
    () => {
      it('R31 is 0 from the start and counts the jobs of every publish refused with QUEUE_FULL, whatever its way in', async () => {
        server = await startTestServer({ url: urlOf(storage), sqs: {} });
        const full = queueName('refused');
        const open_ = queueName('unbounded');
        const series = (queue: string) => `leaseq_refused_publishes_total{queue="${queue}"}`;
        await api('PUT', `/v1/queues/${full}`, { maxLength: 1 });
        await api('PUT', `/v1/queues/${open_}`, {});
        // Written before the first refusal, so that increase() sees that one.
        expect(await sample(series(full))).toBe(0);
        expect(await sample(series(open_))).toBe(0);

        expect((await api('POST', `/v1/queues/${full}/jobs`, { id: 'a' })).status).toBe(200);
        const one = await api('POST', `/v1/queues/${full}/jobs`, { id: 'b' });
        expect(one).toMatchObject({ status: 409, body: { error: { code: 'QUEUE_FULL' } } });
        const batch = await api('POST', `/v1/queues/${full}/jobs/batch`, {
          jobs: [{ id: 'c' }, { id: 'd' }],
        });
        expect(batch.status).toBe(409);
        // An operation of a batch: its own outcome, counted in the same step as the stats after it.
        const operations = await api('POST', `/v1/queues/${full}/operations`, {
          operations: [{ type: 'publish', jobs: [{ id: 'e' }] }, { type: 'stats' }],
        });
        expect(operations.body.results[0]).toMatchObject({ error: { code: 'QUEUE_FULL' } });
        expect(operations.body.results[1].value).toMatchObject({ published: 1, refused: 4 });

        const client = await FrameClient.open(server.baseUrl);
        const frame = await client.request({
          type: 'batch',
          id: 1,
          queue: full,
          operations: [{ type: 'publish', jobs: [{ id: 'f' }] }],
        });
        await client.close();
        expect(frame.results[0]).toMatchObject({ ok: false, error: { code: 'QUEUE_FULL' } });

        const queueUrl = `${server.baseUrl}/sqs/000000000000/${full}`;
        expect(await sqs('SendMessage', { QueueUrl: queueUrl, MessageBody: 'g' })).not.toBe(200);
        expect(
          await sqs('SendMessageBatch', {
            QueueUrl: queueUrl,
            'SendMessageBatchRequestEntry.1.Id': 'h',
            'SendMessageBatchRequestEntry.1.MessageBody': 'h',
            'SendMessageBatchRequestEntry.2.Id': 'i',
            'SendMessageBatchRequestEntry.2.MessageBody': 'i',
          }),
        ).toBe(200); // each entry fails on its own

        const inProcess = await server.broker.queue(full);
        await expect(inProcess.publish({ id: 'j' })).rejects.toBeInstanceOf(QueueFullError);

        // 1 + 2 + 1 (HTTP) + 1 (stream) + 1 + 2 (SQS) + 1 (in process); nothing of them stored.
        const stats = (await api('GET', `/v1/queues/${full}/stats`)).body;
        expect(stats).toMatchObject({ published: 1, ready: 1, refused: 9 });
        expect(await sample(series(full))).toBe(9);
        expect(await sample(series(open_))).toBe(0);

        await server.close();
        server = undefined;
        if (storage.name === 'memory') return;
        // Kept in the storage with the other counters: a broker opened anew reads them.
        const again = await open(urlOf(storage));
        try {
          expect(await (await again.queue(full)).stats()).toMatchObject({ refused: 9 });
        } finally {
          await again.close();
        }
      });
    },
  );
}
