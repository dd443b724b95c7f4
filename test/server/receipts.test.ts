import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { ValidationError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { Receipts } from '../../src/server/receipts.js';
import { call, startTestServer, type TestServer } from './helpers.js';

const SECRET = 'a-receipt-secret-of-32-characters!!';

describe('Receipts', () => {
  const receipts = new Receipts(SECRET);

  it('round-trips the token and the job id, whatever characters the id holds', () => {
    // Verified from memory by the issuer, and by its signature alone by another instance.
    const signatureOnly = new Receipts(SECRET);
    const ids = ['a', 'job-1', 'ü/ñ 😀', '"quoted",[json]', 'back\\slash\n\u2028', 'x'.repeat(256)];
    for (const id of ids) {
      const receipt = receipts.issue('orders', 42, id);
      expect(receipt).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(receipts.verify('orders', receipt)).toEqual({ token: 42, id });
      expect(signatureOnly.verify('orders', receipt)).toEqual({ token: 42, id });
    }
    const big = receipts.issue('orders', Number.MAX_SAFE_INTEGER, 'a');
    expect(receipts.verify('orders', big).token).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('keeps the receipt format: one made by an earlier version with the same secret verifies', () => {
    // Issued with SECRET by the implementation of commit 97a2c03.
    const earlier = [
      'AQAAAQAAAAAHGYSPVs-jsSemQu9De38hpNF_HRe5JhbmgQGa3T2XlejDvC9qb2I',
      'AQAAAAAAAAABqs4RebrR3A_AzNJjpLqvljs9mVnm84em-BQPOAehrf1h',
    ];
    expect(receipts.issue('orders', 2 ** 40 + 7, 'ü/job')).toBe(earlier[0]);
    expect(receipts.issue('orders', 1, 'a')).toBe(earlier[1]);
    const fresh = new Receipts(SECRET);
    expect(fresh.verify('orders', earlier[0] as string)).toEqual({
      token: 2 ** 40 + 7,
      id: 'ü/job',
    });
  });

  it('refuses another queue, another secret, and every altered byte', () => {
    const receipt = receipts.issue('orders', 7, 'job');
    const refuse = (queue: string, text: string, by = receipts) =>
      expect(() => by.verify(queue, text)).toThrow(
        expect.objectContaining({ code: 'INVALID_RECEIPT' }),
      );
    refuse('payments', receipt);
    refuse('orders', receipt, new Receipts('another-secret-of-32-characters!!!'));
    const bytes = Buffer.from(receipt, 'base64url');
    for (let index = 0; index < bytes.length; index++) {
      const altered = Buffer.from(bytes);
      altered[index] = (altered[index] as number) ^ 0x01;
      refuse('orders', altered.toString('base64url'));
    }
    refuse('orders', receipt.toUpperCase());
    refuse('orders', `${receipt}A`);
    refuse('orders', receipt.slice(0, -1));
    refuse('orders', '');
  });

  it('verifies its own recent receipts from memory, and still refuses what a key change retired', () => {
    const own = new Receipts('first-secret-of-32-characters!!!!!');
    const receipt = own.issue('orders', 3, 'job');
    expect(own.verify('orders', receipt)).toEqual({ token: 3, id: 'job' });
    // Remembered for its own queue only.
    expect(() => own.verify('payments', receipt)).toThrow(
      expect.objectContaining({ code: 'INVALID_RECEIPT' }),
    );
    // A rotation that keeps the old key accepts it; one that drops the key refuses it.
    own.useKeys(['second-secret-of-32-characters!!!!', 'first-secret-of-32-characters!!!!!']);
    expect(own.verify('orders', receipt)).toEqual({ token: 3, id: 'job' });
    own.useKeys(['second-secret-of-32-characters!!!!']);
    expect(() => own.verify('orders', receipt)).toThrow(
      expect.objectContaining({ code: 'INVALID_RECEIPT' }),
    );
  });

  it('verifies by its MAC a receipt issued long ago or by another process with the secret', () => {
    const own = new Receipts(SECRET);
    const old = own.issue('orders', 1, 'first');
    for (let token = 2; token < 20_000; token++) own.issue('orders', token, 'later');
    expect(own.verify('orders', old)).toEqual({ token: 1, id: 'first' });
    expect(new Receipts(SECRET).verify('orders', old)).toEqual({ token: 1, id: 'first' });
    // The claim handed out is the caller's own: changing it changes nothing remembered.
    const latest = own.issue('orders', 20_000, 'x');
    const claim = own.verify('orders', latest);
    claim.token = 5;
    expect(own.verify('orders', latest)).toEqual({ token: 20_000, id: 'x' });
  });

  it('signs session handles the same way; a bad one is an unknown session', () => {
    const handle = receipts.issueSession('orders', 's1');
    expect(receipts.verifySession('orders', handle)).toBe('s1');
    expect(() => receipts.verifySession('payments', handle)).toThrow(ValidationError);
    expect(() => receipts.verifySession('orders', 's1')).toThrow(ValidationError);
  });
});

describe('receipts over HTTP', () => {
  let server: TestServer;
  const clock = new ManualClock(1000);
  const api = (method: string, path: string, body?: unknown) =>
    call(server.baseUrl, method, path, body === undefined ? {} : { body });
  const state = async (name: string) => {
    const queue = await server.broker.queue(name);
    return { view: await queue.inspect(), stats: await queue.stats() };
  };

  beforeAll(async () => {
    server = await startTestServer({ clock, receiptSecret: SECRET });
    for (const name of ['orders', 'payments']) {
      await api('PUT', `/v1/queues/${name}`, { visibility: 100 });
      await api('POST', `/v1/queues/${name}/jobs`, { id: `${name}-1` });
    }
  });

  afterAll(async () => {
    await server.close();
  });

  it('refuses forged, altered and other-queue receipts with INVALID_RECEIPT, changing nothing', async () => {
    const [order] = (await api('POST', '/v1/queues/orders/receive', {})).body.deliveries;
    const [payment] = (await api('POST', '/v1/queues/payments/receive', {})).body.deliveries;
    const forger = new Receipts('not-the-server-secret-but-32-chars!');
    const altered = Buffer.from(order.receipt, 'base64url');
    altered[8] = 2; // the token's last byte: 1 → 2
    const before = await state('orders');
    for (const receipt of [
      payment.receipt,
      forger.issue('orders', order.token, order.id),
      altered.toString('base64url'),
      order.receipt.toLowerCase(),
    ]) {
      for (const [path, body] of [
        ['/ack', { receipt }],
        ['/nack', { receipt, requeue: false }],
        ['/extend', { receipt, visibility: 10 }],
      ] as const) {
        const answer = await api('POST', `/v1/queues/orders${path}`, body);
        expect(answer.status).toBe(400);
        expect(answer.body).toEqual({
          error: {
            code: 'INVALID_RECEIPT',
            message:
              "the receipt was not issued for queue orders under this server's secrets (one issued before a secret rotation is refused once its grace period ended)",
          },
        });
      }
      const batch = await api('POST', '/v1/queues/orders/ack/batch', {
        receipts: [order.receipt, receipt],
      });
      expect(batch.status).toBe(400);
    }
    expect(await state('orders')).toEqual(before);
    expect(before.view.active.map((a) => a.token)).toEqual([order.token]);
  });

  it('answers a genuine but stale receipt as SPEC R8 says: false, and the newer delivery stays live', async () => {
    await api('PUT', '/v1/queues/worked', { visibility: 5 });
    await api('POST', '/v1/queues/worked/jobs', { id: 'a' });
    const [first] = (await api('POST', '/v1/queues/worked/receive', {})).body.deliveries;
    clock.advance(5);
    expect((await api('POST', '/v1/queues/worked/ack', { receipt: first.receipt })).body).toEqual({
      acked: false,
    });
    const [second] = (await api('POST', '/v1/queues/worked/receive', {})).body.deliveries;
    expect(second).toMatchObject({ id: 'a', token: 2, deliveryCount: 2, redelivered: true });
    expect(
      (await api('POST', '/v1/queues/worked/ack', { receipt: first.receipt })).body.acked,
    ).toBe(false);
    expect(
      (await api('POST', '/v1/queues/worked/nack', { receipt: first.receipt })).body.nacked,
    ).toBe(false);
    const extend = await api('POST', '/v1/queues/worked/extend', {
      receipt: first.receipt,
      visibility: 50,
    });
    expect(extend.body.deadline).toBeNull();
    expect((await state('worked')).view.active).toEqual([
      { token: 2, id: 'a', deadline: clock.now() + 5, deliveryCount: 2 },
    ]);
    clock.advance(1);
    expect(
      (await api('POST', '/v1/queues/worked/ack', { receipt: second.receipt })).body.acked,
    ).toBe(true);
  });
});

describe('R8 a configured receiptSecret is bound to its storage (memory restarted, another storage)', () => {
  /** A job published without an id and received: on a fresh memory storage, token 1 of job-1. */
  const firstDelivery = async (baseUrl: string) => {
    await call(baseUrl, 'PUT', '/v1/queues/orders', { body: {} });
    await call(baseUrl, 'POST', '/v1/queues/orders/jobs', { body: { payload: { n: 1 } } });
    const [delivery] = (await call(baseUrl, 'POST', '/v1/queues/orders/receive', { body: {} })).body
      .deliveries;
    return delivery as { token: number; id: string; receipt: string };
  };

  it('refuses a receipt kept from before a restart: it would name a new delivery of another job', async () => {
    const before = await startTestServer({ receiptSecret: SECRET });
    const old = await firstDelivery(before.baseUrl);
    await before.close();
    const after = await startTestServer({ receiptSecret: SECRET });
    try {
      const fresh = await firstDelivery(after.baseUrl);
      // The same queue, token and job id as the delivery the old receipt was issued for.
      expect([fresh.token, fresh.id]).toEqual([old.token, old.id]);
      expect(fresh.receipt).not.toBe(old.receipt);
      const late = await call(after.baseUrl, 'POST', '/v1/queues/orders/ack', {
        body: { receipt: old.receipt },
      });
      expect(late.status).toBe(400);
      expect(late.body.error.code).toBe('INVALID_RECEIPT');
      const queue = await after.broker.queue('orders');
      expect((await queue.inspect()).active.map((lease) => lease.token)).toEqual([fresh.token]);
      const acked = await call(after.baseUrl, 'POST', '/v1/queues/orders/ack', {
        body: { receipt: fresh.receipt },
      });
      expect(acked.body).toEqual({ acked: true });
    } finally {
      await after.close();
    }
  });

  it('is shared by the servers over one such storage: a receipt of one acks through the other', async () => {
    const broker = await open('memory:');
    const apps = [
      await createApp({ broker, receiptSecret: SECRET }),
      await createApp({ broker, receiptSecret: SECRET }),
    ];
    try {
      const [first, second] = await Promise.all(
        apps.map((app) => app.listen({ host: '127.0.0.1', port: 0 })),
      );
      const delivery = await firstDelivery(first as string);
      const acked = await call(second as string, 'POST', '/v1/queues/orders/ack', {
        body: { receipt: delivery.receipt },
      });
      expect(acked.body).toEqual({ acked: true });
    } finally {
      for (const app of apps) await app.close();
      await broker.close();
    }
  });

  it('leaves a durable storage alone: a receipt signed with the configured secret survives a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-receipts-'));
    const url = `sqlite:${join(dir, 'q.db')}`;
    try {
      const before = await startTestServer({ url, receiptSecret: SECRET });
      const old = await firstDelivery(before.baseUrl);
      await before.close();
      const after = await startTestServer({ url, receiptSecret: SECRET });
      try {
        const acked = await call(after.baseUrl, 'POST', '/v1/queues/orders/ack', {
          body: { receipt: old.receipt },
        });
        expect(acked.body).toEqual({ acked: true });
      } finally {
        await after.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a receipt of another durable storage: a new one starts its tokens and ids at 1 again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-receipts-'));
    try {
      const before = await startTestServer({
        url: `sqlite:${join(dir, 'old.db')}`,
        receiptSecret: SECRET,
      });
      const old = await firstDelivery(before.baseUrl);
      await before.close();
      // The move: the same configured secret over a new storage (another file, PostgreSQL).
      const after = await startTestServer({
        url: `sqlite:${join(dir, 'new.db')}`,
        receiptSecret: SECRET,
      });
      try {
        const fresh = await firstDelivery(after.baseUrl);
        expect([fresh.token, fresh.id]).toEqual([old.token, old.id]);
        const late = await call(after.baseUrl, 'POST', '/v1/queues/orders/ack', {
          body: { receipt: old.receipt },
        });
        expect(late.status).toBe(400);
        expect(late.body.error.code).toBe('INVALID_RECEIPT');
        const queue = await after.broker.queue('orders');
        expect((await queue.inspect()).active.map((lease) => lease.token)).toEqual([fresh.token]);
        const acked = await call(after.baseUrl, 'POST', '/v1/queues/orders/ack', {
          body: { receipt: fresh.receipt },
        });
        expect(acked.body).toEqual({ acked: true });
      } finally {
        await after.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('still takes a receipt signed with the configured secret alone, as servers issued them before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-receipts-'));
    try {
      const server = await startTestServer({
        url: `sqlite:${join(dir, 'q.db')}`,
        receiptSecret: SECRET,
      });
      try {
        const delivery = await firstDelivery(server.baseUrl);
        const earlier = new Receipts(SECRET).issue('orders', delivery.token, delivery.id);
        expect(earlier).not.toBe(delivery.receipt);
        const acked = await call(server.baseUrl, 'POST', '/v1/queues/orders/ack', {
          body: { receipt: earlier },
        });
        expect(acked.body).toEqual({ acked: true });
      } finally {
        await server.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
