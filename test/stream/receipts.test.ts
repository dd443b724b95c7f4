import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { ManualClock } from '../../src/index.js';
import { leaseq } from '../cli/context.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

const open: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const each of open.splice(0).reverse()) await each.close();
});

async function connect(): Promise<{ server: TestServer; client: RemoteBroker }> {
  const server = await startTestServer({});
  open.push(server);
  const client = new RemoteBroker(server.baseUrl, { transport: 'stream' });
  open.push(client);
  return { server, client };
}

describe('settling by receipt over the stream', () => {
  it('gives the subscription its credit back at once, as a settle by token does', async () => {
    const { client } = await connect();
    // A lease far longer than the test: credit can only come back by the settles themselves.
    const queue = await client.queue('jobs', { visibility: 60_000 });
    await queue.publishBatch(['a', 'b', 'c', 'd'].map((id) => ({ id })));
    const taken: string[] = [];
    const first = await queue.receiveWithReceipts({ max: 1, wait: 5000 });
    taken.push(...first.map((each) => each.id));
    expect(await queue.ackReceipts(first.map((each) => each.receipt))).toEqual([true]);
    const second = await queue.receiveWithReceipts({ max: 1, wait: 5000 });
    taken.push(...second.map((each) => each.id));
    expect(await queue.nackReceipt(second[0]?.receipt as string, { requeue: false })).toBe(true);
    const third = await queue.receiveWithReceipts({ max: 1, wait: 5000 });
    taken.push(...third.map((each) => each.id));
    expect(await queue.extendReceipt(third[0]?.receipt as string, 1000)).toEqual(
      expect.any(Number),
    );
    expect(taken).toEqual(['a', 'b', 'c']);
    expect(await queue.stats()).toMatchObject({ acks: 1, dead: 1, active: 1, ready: 1 });
  });

  it('refuses a forged receipt per operation with the status the same refusal gets over HTTP', async () => {
    const { client } = await connect();
    const queue = await client.queue('jobs');
    await expect(queue.ackReceipts(['Zm9yZ2Vk'])).rejects.toMatchObject({
      code: 'INVALID_RECEIPT',
      status: 400,
    });
  });
});

describe('concurrent receives over the stream', () => {
  it('raise the prefetch to what they wait for together: four loops of one hold four jobs', async () => {
    const { client } = await connect();
    const queue = await client.queue('jobs', { visibility: 60_000 });
    await queue.publishBatch(['a', 'b', 'c', 'd'].map((id) => ({ id })));
    // No ack in between: each receive must be served while the others' jobs stay unsettled.
    const received = await Promise.all(
      Array.from({ length: 4 }, () => queue.receive({ max: 1, wait: 5000 })),
    );
    expect(
      received
        .flat()
        .map((delivery) => delivery.id)
        .sort(),
    ).toEqual(['a', 'b', 'c', 'd']);
    expect(await queue.stats()).toMatchObject({ active: 4, ready: 0 });
  });
});

describe('deliveries held by the client over the stream', () => {
  it('are never handed out once their lease ran out while they waited: the job is received afresh', async () => {
    const { client } = await connect();
    const queue = await client.queue('jobs', { visibility: 150 });
    await queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    // A receive of two makes the prefetch two; both come at once and are acked.
    const first = await queue.receive({ max: 2, wait: 5000 });
    expect(first.map((delivery) => delivery.id)).toEqual(['a', 'b']);
    await queue.ackMany(first.map((delivery) => delivery.token));
    // Two more are pushed while nobody waits: held by the client, leased to it for 150 ms.
    await queue.publishBatch([{ id: 'c' }, { id: 'd' }]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const later = await queue.receive({ max: 2, wait: 5000 });
    // Their leases ended (given back just before, R33): what the client hands out is a later,
    // live delivery (pushed again), never the first one, tokens 3 and 4.
    expect(later.map((delivery) => delivery.id)).toEqual(['c', 'd']);
    for (const delivery of later) expect(delivery.token).toBeGreaterThan(4);
    expect(await queue.ackMany(later.map((delivery) => delivery.token))).toEqual([true, true]);
    expect(await queue.stats()).toMatchObject({ acks: 4, staleAcks: 0 });
    // Held with nobody to take it, a job is given back before its lease ends, not leased again
    // and again: a second of 150 ms leases costs it one delivery, not seven (R13 counts them).
    await queue.publish({ id: 'e' });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const [again] = await queue.receive({ max: 1, wait: 5000 });
    expect(again?.id).toBe('e');
    expect(again?.deliveryCount).toBeLessThanOrEqual(2);
  });

  it("are dropped by the server's clock, not the client's: a lease the server's clock ended is never handed out", async () => {
    // The server's clock jumps two minutes ahead while the client holds two 60 s leases.
    const clock = new ManualClock(1_000_000);
    const server = await startTestServer({ clock });
    open.push(server);
    const client = new RemoteBroker(server.baseUrl, { transport: 'stream' });
    open.push(client);
    const queue = await client.queue('jobs', { visibility: 60_000 });
    await queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    const first = await queue.receive({ max: 2, wait: 5000 });
    await queue.ackMany(first.map((delivery) => delivery.token));
    await queue.publishBatch([{ id: 'c' }, { id: 'd' }]);
    const until = async (done: (stats: { active: number; redeliveries: number }) => boolean) => {
      for (let tries = 0; tries < 300 && !done(await queue.stats()); tries++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    await until((stats) => stats.active === 2);
    clock.advance(120_000);
    // The server takes the credit of the ended leases back and pushes both jobs again, with the
    // time of the push: the client's first two, held since before the jump, are stale.
    await until((stats) => stats.redeliveries === 2);
    const later = await queue.receive({ max: 2, wait: 5000 });
    expect(later.map((delivery) => [delivery.id, delivery.deliveryCount])).toEqual([
      ['c', 2],
      ['d', 2],
    ]);
    expect(await queue.ackMany(later.map((delivery) => delivery.token))).toEqual([true, true]);
    expect(await queue.stats()).toMatchObject({ acks: 4, staleAcks: 0 });
  });
});

// A waiting receive of `max` jobs over the stream gets them as in-process and over plain HTTP:
// all that is ready at once, not one and the rest held and given back later.
describe('a waiting receive of max jobs over the stream', () => {
  it('takes every ready job up to max in one call, none held and given back', async () => {
    const { client } = await connect();
    const queue = await client.queue('jobs', { visibility: 60_000 });
    await queue.publishBatch(Array.from({ length: 10 }, (_, index) => ({ id: `j${index}` })));
    const counts: number[] = [];
    for (let call = 0; call < 3; call++) {
      counts.push((await queue.receive({ max: 10, wait: 300 })).length);
    }
    expect(counts).toEqual([10, 0, 0]);
    expect(await queue.stats()).toMatchObject({ active: 10, deliveries: 10, nacks: 0 });
  });

  it('takes the jobs of a batch published while it waits, together', async () => {
    const { client } = await connect();
    const queue = await client.queue('jobs', { visibility: 60_000 });
    const waiting = queue.receive({ max: 10, wait: 5000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await queue.publishBatch(Array.from({ length: 5 }, (_, index) => ({ id: `j${index}` })));
    expect((await waiting).map((delivery) => delivery.id)).toEqual(['j0', 'j1', 'j2', 'j3', 'j4']);
  });

  it('the CLI receive --max 10 --wait prints the ten ready jobs', async () => {
    const { server, client } = await connect();
    const queue = await client.queue('cli', { visibility: 60_000 });
    await queue.publishBatch(Array.from({ length: 10 }, (_, index) => ({ id: `c${index}` })));
    const result = await leaseq(['receive', 'cli', '--max', '10', '--wait', '2000', '--json'], {
      env: { LEASEQ_SERVER: server.baseUrl },
    });
    expect(result.code).toBe(0);
    const received = JSON.parse(result.stdout) as { id: string }[];
    expect(received.map((delivery) => delivery.id)).toEqual(
      Array.from({ length: 10 }, (_, index) => `c${index}`),
    );
    expect(await queue.stats()).toMatchObject({ active: 10, deliveries: 10, nacks: 0 });
  });
});
