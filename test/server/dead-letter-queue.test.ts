import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { openRemote, type RemoteBroker } from '../../src/client/index.js';
import { ConflictError, DeadLetterLoopError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { call, startTestServer, type TestServer } from './helpers.js';

const ADMIN_OF_DLQ = 'dlq-admin-key-0123456789';
const REDRIVER = 'redriver-key-0123456789';
const STARS = 'stars-key-0123456789';
const ORDERS_ADMIN = 'orders-admin-key-0123456789';
const KEYS = [
  {
    name: 'admin',
    key: 'admin-key-0123456789',
    allow: [{ queues: '*', actions: ['admin' as const] }],
  },
  {
    name: 'dlq-admin',
    key: ADMIN_OF_DLQ,
    allow: [{ queues: 'orders-dlq', actions: ['admin' as const] }],
  },
  {
    name: 'orders-admin',
    key: ORDERS_ADMIN,
    allow: [{ queues: 'orders-*', actions: ['admin' as const] }],
  },
  {
    name: 'stars',
    key: STARS,
    allow: [{ queues: '**', actions: ['admin' as const] }],
  },
  {
    name: 'redriver',
    key: REDRIVER,
    allow: [
      { queues: 'orders-dlq', actions: ['admin' as const] },
      { queues: 'orders', actions: ['publish' as const] },
    ],
  },
];

let server: TestServer;
let clock: ManualClock;
let client: RemoteBroker;

beforeEach(async () => {
  clock = new ManualClock(0);
  server = await startTestServer({ clock, keys: KEYS });
  client = await openRemote(server.baseUrl, { apiKey: 'admin-key-0123456789' });
});

afterEach(async () => {
  await client.close();
  await server.close();
});

describe('R21 dead-letter queues over HTTP and the remote client', () => {
  it('R21 PUT and PATCH carry deadLetterQueue (null removes it); a loop is a 409 CONFLICT', async () => {
    const admin = { apiKey: 'admin-key-0123456789' };
    const created = await call(server.baseUrl, 'PUT', '/v1/queues/orders', {
      ...admin,
      body: { deadLetterQueue: 'orders-dlq', maxDeliveries: null },
    });
    expect(created.status).toBe(201);
    expect(created.body.options).toMatchObject({
      deadLetterQueue: 'orders-dlq',
      maxDeliveries: null,
    });
    const loop = await call(server.baseUrl, 'PUT', '/v1/queues/orders-dlq', {
      ...admin,
      body: { deadLetterQueue: 'orders' },
    });
    expect(loop.status).toBe(409);
    expect(loop.body.error.code).toBe('CONFLICT');
    const bad = await call(server.baseUrl, 'PATCH', '/v1/queues/orders', {
      ...admin,
      body: { deadLetterQueue: 'a/b' },
    });
    expect(bad.status).toBe(400);
    const removed = await call(server.baseUrl, 'PATCH', '/v1/queues/orders', {
      ...admin,
      body: { deadLetterQueue: null },
    });
    expect(removed.status).toBe(200);
    expect(removed.body.options).not.toHaveProperty('deadLetterQueue');
    await expect(client.queue('orders', { deadLetterQueue: 'elsewhere' })).rejects.toBeInstanceOf(
      ConflictError,
    );
  });

  it('R21 a key names as dead-letter queue only a queue it may publish to: else 403, nothing changed', async () => {
    const admin = { apiKey: 'admin-key-0123456789' };
    const owner = { apiKey: ADMIN_OF_DLQ };
    expect(
      (await call(server.baseUrl, 'PUT', '/v1/queues/payroll', { ...admin, body: {} })).status,
    ).toBe(201);
    // Otherwise a key could send any payload to payroll: publish, receive, nack without requeue.
    const create = await call(server.baseUrl, 'PUT', '/v1/queues/orders-dlq', {
      ...owner,
      body: { deadLetterQueue: 'payroll' },
    });
    expect(create.status).toBe(403);
    expect(create.body.error).toEqual({
      code: 'FORBIDDEN',
      message:
        'this key may not publish on queue payroll, so it may not make it a dead-letter queue (dead jobs are published there)',
    });
    expect((await server.broker.listQueues()).map((info) => info.name)).toEqual(['payroll']);
    const plain = await call(server.baseUrl, 'PUT', '/v1/queues/orders-dlq', {
      ...owner,
      body: {},
    });
    expect(plain.status).toBe(201);
    const update = await call(server.baseUrl, 'PATCH', '/v1/queues/orders-dlq', {
      ...owner,
      body: { deadLetterQueue: 'payroll' },
    });
    expect(update.status).toBe(403);
    expect(update.body.error.code).toBe('FORBIDDEN');
    const options = await (await server.broker.queue('orders-dlq')).options();
    expect(options.deadLetterQueue).toBeUndefined();
    // Removing one, or naming one as a key that may publish there, is as before.
    expect(
      (
        await call(server.baseUrl, 'PATCH', '/v1/queues/orders-dlq', {
          ...owner,
          body: { deadLetterQueue: null },
        })
      ).status,
    ).toBe(200);
    const byAdmin = await call(server.baseUrl, 'PATCH', '/v1/queues/orders-dlq', {
      ...admin,
      body: { deadLetterQueue: 'payroll' },
    });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body.options.deadLetterQueue).toBe('payroll');
  });

  it('R26 a loop refusal names the way round only to a key that may see every queue on it', async () => {
    const admin = { apiKey: 'admin-key-0123456789' };
    const patch = (name: string, apiKey: string, deadLetterQueue: string) =>
      call(server.baseUrl, 'PATCH', `/v1/queues/${name}`, { apiKey, body: { deadLetterQueue } });
    for (const name of ['orders-a', 'orders-b', 'billing']) {
      await call(server.baseUrl, 'PUT', `/v1/queues/${name}`, { ...admin, body: {} });
    }
    expect((await patch('orders-b', 'admin-key-0123456789', 'billing')).status).toBe(200);
    // billing's own setting, which the orders key may not read.
    expect((await patch('billing', 'admin-key-0123456789', 'orders-a')).status).toBe(200);
    const hidden = await patch('orders-a', ORDERS_ADMIN, 'orders-b');
    expect(hidden.status).toBe(409);
    expect(hidden.body.error.message).toBe(
      'deadLetterQueue of orders-a would loop back to it, by way of queues this key may not see',
    );
    expect(hidden.body.error.chain).toBeUndefined();
    const shown = await patch('orders-a', 'admin-key-0123456789', 'orders-b');
    expect(shown.status).toBe(409);
    expect(shown.body.error.message).toContain('(orders-a → orders-b → billing → orders-a)');
    expect(shown.body.error.chain).toEqual(['orders-a', 'orders-b', 'billing', 'orders-a']);
  });

  it('R26 the remote client refuses a loop with the DeadLetterLoopError in-process calls throw, its chain included', async () => {
    const refusal = async (broker: {
      queue(name: string, options?: object): Promise<unknown>;
      updateQueue(name: string, options: object): Promise<unknown>;
    }) => {
      await broker.queue('loop-a');
      await broker.queue('loop-b', { deadLetterQueue: 'loop-a' });
      const error = await broker.updateQueue('loop-a', { deadLetterQueue: 'loop-b' }).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(DeadLetterLoopError);
      expect(error).toBeInstanceOf(ConflictError);
      const { code, chain, message } = error as DeadLetterLoopError;
      return { code, chain, message };
    };
    const inProcess = await open('memory:');
    const expected = await refusal(inProcess);
    await inProcess.close();
    expect(expected.chain).toEqual(['loop-a', 'loop-b', 'loop-a']);
    expect(await refusal(client)).toEqual(expected);
    const overHttp = await openRemote(server.baseUrl, {
      apiKey: 'admin-key-0123456789',
      transport: 'http',
    });
    try {
      await overHttp.queue('self');
      const error = await overHttp.updateQueue('self', { deadLetterQueue: 'self' }).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(DeadLetterLoopError);
      expect((error as DeadLetterLoopError).chain).toEqual(['self', 'self']);
    } finally {
      await overHttp.close();
    }
    // To a key that may not see every queue on the way, a ConflictError naming none.
    const orders = await openRemote(server.baseUrl, { apiKey: ORDERS_ADMIN });
    try {
      await client.queue('orders-x');
      await client.queue('billing-x', { deadLetterQueue: 'orders-x' });
      await client.queue('orders-y', { deadLetterQueue: 'billing-x' });
      const hidden = await orders.updateQueue('orders-x', { deadLetterQueue: 'orders-y' }).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(hidden).toBeInstanceOf(ConflictError);
      expect(hidden).not.toBeInstanceOf(DeadLetterLoopError);
      expect(hidden).not.toHaveProperty('chain');
    } finally {
      await orders.close();
    }
  });

  it('R21 a rejected job reaches the dead-letter queue with its origin; moveJobs sends it back', async () => {
    const dlq = await client.queue('orders-dlq');
    const orders = await client.queue('orders', { deadLetterQueue: 'orders-dlq' });
    await orders.publish({ id: 'o-1', payload: { total: 3 } });
    const [delivery] = await orders.receive();
    clock.set(2);
    expect(await orders.nack(delivery?.token as number, { requeue: false, reason: 'bad' })).toBe(
      true,
    );
    const job = await dlq.job('o-1');
    expect(job).toMatchObject({
      state: 'ready',
      deliveryCount: 0,
      payload: { total: 3 },
      origin: { queue: 'orders', reason: 'bad', at: 2 },
      history: [{ outcome: 'rejected', reason: 'bad' }],
    });
    const raw = await call(server.baseUrl, 'GET', '/v1/queues/orders-dlq/jobs/o-1', {
      apiKey: 'admin-key-0123456789',
    });
    expect(raw.body.origin).toEqual({ queue: 'orders', reason: 'bad', at: 2 });

    // Moving jobs back publishes them where they died: a key that administers only the
    // dead-letter queue may do neither, whether the queue is named or not.
    const operate = (apiKey: string, operations: unknown[]) =>
      call(server.baseUrl, 'POST', '/v1/queues/orders-dlq/operations', {
        apiKey,
        body: { operations },
      });
    const refused = await operate(ADMIN_OF_DLQ, [
      { type: 'moveJobs', to: 'orders' },
      { type: 'moveJobs' },
      { type: 'moveJobs', origins: ['orders'] },
    ]);
    for (const result of refused.body.results) {
      expect(result).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    }
    expect(refused.body.results[1].error.message).toContain('name those queues with origins');
    expect(refused.body.results[2].error.message).toContain('may not publish on queue orders');
    expect((await dlq.inspect()).ready).toEqual(['o-1']);
    // A key that may publish on the origin moves the jobs that died there, named.
    const moved = await operate(REDRIVER, [
      { type: 'moveJobs' },
      { type: 'moveJobs', origins: ['orders', 'payroll'] },
      { type: 'moveJobs', origins: ['orders'], max: 0 },
    ]);
    expect(moved.body.results[0]).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    expect(moved.body.results[1]).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    expect(moved.body.results[2]).toMatchObject({
      ok: false,
      error: { code: 'INVALID_ARGUMENT' },
    });
    const byRedriver = await operate(REDRIVER, [{ type: 'moveJobs', origins: ['orders'] }]);
    expect(byRedriver.body.results[0]).toEqual({ ok: true, value: 1 });
    expect((await orders.inspect()).ready).toEqual(['o-1']);
    // A key whose pattern is stars alone may publish everywhere: it moves back unnamed.
    const [again] = await orders.receive();
    await orders.nack(again?.token as number, { requeue: false });
    const byStars = await operate(STARS, [{ type: 'moveJobs' }]);
    expect(byStars.body.results[0]).toEqual({ ok: true, value: 1 });
    expect((await orders.inspect()).ready).toEqual(['o-1']);
    expect(await orders.job('o-1')).not.toHaveProperty('origin');
    expect(await dlq.moveJobs()).toBe(0);
  });
});
