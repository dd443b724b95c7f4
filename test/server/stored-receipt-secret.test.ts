import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/index.js';
import { RECEIPT_KEYS_REFRESH_MS, SigningKeyChoice } from '../../src/server/receipt-keys.js';
import { Receipts } from '../../src/server/receipts.js';
import { postgresUrl, queueName } from '../conformance/engines.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { call, startTestServer, type TestServer } from './helpers.js';
import { postgresSkipReason } from './storages.js';

// With no receiptSecret configured (the default of `npm start`), receipts are signed with a
// secret kept in the storage: restarts and several servers over one storage agree.
const dir = temporaryDirectory('leaseq-receipt-secret-');

const WITHOUT_SECRET = { receiptSecret: undefined };

async function receiveOne(server: TestServer, queue: string, id: string): Promise<string> {
  await call(server.baseUrl, 'PUT', `/v1/queues/${queue}`, { body: {} });
  await call(server.baseUrl, 'POST', `/v1/queues/${queue}/jobs`, { body: { id } });
  const answer = await call(server.baseUrl, 'POST', `/v1/queues/${queue}/receive`, { body: {} });
  return answer.body.deliveries[0].receipt as string;
}

async function ack(server: TestServer, queue: string, receipt: string) {
  return call(server.baseUrl, 'POST', `/v1/queues/${queue}/ack`, { body: { receipt } });
}

describe('the receipt secret kept in the storage', () => {
  it('a receipt from before a restart acks after it (same SQLite file, no secret configured)', async () => {
    const url = `sqlite:${join(dir, 'restart.db')}`;
    const first = await startTestServer({ url, ...WITHOUT_SECRET });
    const receipt = await receiveOne(first, 'mail', 'm1');
    await first.close();
    const second = await startTestServer({ url, ...WITHOUT_SECRET });
    try {
      expect((await ack(second, 'mail', receipt)).body).toEqual({ acked: true });
    } finally {
      await second.close();
    }
  });

  it('a receipt of before a rotation is accepted during the grace period, refused after it', async () => {
    const url = `sqlite:${join(dir, 'rotate.db')}`;
    const clock = new ManualClock(1_000_000);
    const first = await startTestServer({ url, clock, ...WITHOUT_SECRET });
    const before = await receiveOne(first, 'mail', 'm1');
    const late = await call(first.baseUrl, 'POST', '/v1/queues/mail/jobs', { body: { id: 'm2' } });
    expect(late.status).toBe(200);
    const receipts = await call(first.baseUrl, 'POST', '/v1/queues/mail/receive', { body: {} });
    const beforeToo = receipts.body.deliveries[0].receipt as string;
    const rotate = first.broker.rotateSecret;
    expect(rotate).toBeDefined();
    await first.broker.rotateSecret?.('receipt', 60_000);
    await first.close();
    const second = await startTestServer({ url, clock, ...WITHOUT_SECRET });
    try {
      expect((await ack(second, 'mail', before)).body).toEqual({ acked: true });
      clock.advance(60_000);
      await second.close();
      const third = await startTestServer({ url, clock, ...WITHOUT_SECRET });
      try {
        const refused = await ack(third, 'mail', beforeToo);
        expect(refused.status).toBe(400);
        expect(refused.body.error.code).toBe('INVALID_RECEIPT');
        // A receipt issued now is signed with the new secret and acks.
        await call(third.baseUrl, 'POST', '/v1/queues/mail/jobs', { body: { id: 'm3' } });
        const fresh = await call(third.baseUrl, 'POST', '/v1/queues/mail/receive', { body: {} });
        const receipt = fresh.body.deliveries[0].receipt as string;
        expect((await ack(third, 'mail', receipt)).body).toEqual({ acked: true });
      } finally {
        await third.close();
      }
    } finally {
      await second.close();
    }
  });
});

const pgSkip = await postgresSkipReason();

describe.skipIf(pgSkip !== undefined)(
  'two servers over one PostgreSQL database (skipped only when unreachable outside CI)',
  () => {
    it('settle each other’s receipts with no secret configured', async () => {
      const a = await startTestServer({ url: postgresUrl(), ...WITHOUT_SECRET });
      const b = await startTestServer({ url: postgresUrl(), ...WITHOUT_SECRET });
      const queue = queueName('receipts');
      try {
        const fromA = await receiveOne(a, queue, 'x');
        expect((await ack(b, queue, fromA)).body).toEqual({ acked: true });
        const fromB = await receiveOne(b, queue, 'y');
        expect((await ack(a, queue, fromB)).body).toEqual({ acked: true });
      } finally {
        await call(a.baseUrl, 'DELETE', `/v1/queues/${queue}`);
        await a.close();
        await b.close();
      }
    });
  },
);

describe('a rotation reaching the servers of one storage one after another', () => {
  const s1 = Buffer.alloc(32, 1);
  const s2 = Buffer.alloc(32, 2);

  it('a server signs with a new secret only a refresh period after it read it: servers yet to read it take its receipts meanwhile', () => {
    const a = new SigningKeyChoice();
    expect(a.keys([s1], 0)).toEqual([s1]);
    expect(a.keys([s1], RECEIPT_KEYS_REFRESH_MS)).toBeUndefined();
    // Rotated (current first): server A reads it before server B does.
    const t = 2 * RECEIPT_KEYS_REFRESH_MS;
    const keysOfA = a.keys([s2, s1], t) as Buffer[];
    expect(keysOfA).toEqual([s1, s2]);
    const serverA = new Receipts('unused');
    serverA.useKeys(keysOfA);
    const serverB = new Receipts('unused');
    serverB.useKeys([s1]);
    expect(serverB.verify('mail', serverA.issue('mail', 7, 'm7'))).toEqual({ token: 7, id: 'm7' });
    // A receipt signed with the new secret by B, once B has read it, A takes at once.
    serverB.useKeys([s2, s1]);
    expect(serverA.verify('mail', serverB.issue('mail', 8, 'm8'))).toEqual({ token: 8, id: 'm8' });
    expect(a.keys([s2, s1], t + RECEIPT_KEYS_REFRESH_MS - 1)).toBeUndefined();
    expect(a.keys([s2, s1], t + RECEIPT_KEYS_REFRESH_MS)).toEqual([s2, s1]);
  });

  it("a server's first read signs with the current secret; one no longer stored (no grace) stops signing at once", () => {
    expect(new SigningKeyChoice().keys([s2, s1], 0)).toEqual([s2, s1]);
    const c = new SigningKeyChoice();
    c.keys([s1], 0);
    expect(c.keys([s2], 1)).toEqual([s2]);
  });
});
