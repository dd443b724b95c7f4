import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock, open } from '../../src/index.js';
import { POSTGRES_URL, postgresSkipReason } from '../crash/postgres.js';
import { temporaryDirectory } from '../temporary-directory.js';

// broker.statsOfQueues (what /metrics and GET /v1/stats read) over a SQL engine opened with
// clockMode 'strict': a call of a queue made while the read is under way runs at the clock's
// later time; the read's step of that queue must not then run at the time read before it (R2
// would refuse it, and the whole read with it).

const directory = temporaryDirectory('leaseq-stats-strict-');
const postgresSkip = await postgresSkipReason();
const suffix = `${process.pid}_${Date.now()}`;
const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const broker of opened.splice(0)) await broker.close();
});

describe.each([
  ['sqlite (file)', () => `sqlite:${join(directory, 'strict.db')}`],
  ['sqlite (in memory)', () => 'sqlite::memory:'],
  ['postgres', () => POSTGRES_URL],
])('statsOfQueues over %s opened strict, with calls made meanwhile', (engine, url) => {
  it('R17 R2 answers the figures after a publish made while the read was under way', async (context) => {
    if (engine === 'postgres' && postgresSkip !== undefined) context.skip(postgresSkip);
    const clock = new ManualClock(1_000);
    const broker = await open(url(), { clock, clockMode: 'strict' });
    opened.push(broker);
    const [ordersName, billingName] = [`orders_${suffix}`, `billing_${suffix}`];
    const orders = await broker.queue(ordersName);
    const billing = await broker.queue(billingName, { deadLetterQueue: ordersName });
    await orders.publish({ id: 'a' });
    await billing.publish({ id: 'b' });
    const reading = broker.statsOfQueues?.([ordersName, billingName]).then(
      (figures) => ({ figures }),
      (error: unknown) => ({ error }),
    );
    clock.advance(5);
    await orders.publish({ id: 'c' });
    await billing.publish({ id: 'd' });
    const read = await reading;
    expect(read).not.toHaveProperty('error');
    const figures = read && 'figures' in read ? read.figures : undefined;
    // Each queue stepped at the clock's reading when its step was made: after the advance.
    expect(figures?.get(ordersName)).toMatchObject({ queueTime: 1_005 });
    expect(figures?.get(billingName)).toMatchObject({ queueTime: 1_005 });
    const after = await broker.statsOfQueues?.([ordersName, billingName]);
    expect(after?.get(ordersName)).toEqual(await orders.stats());
    expect(after?.get(billingName)).toEqual(await billing.stats());
    expect(after?.get(ordersName)).toMatchObject({ published: 2, ready: 2 });
  });
});
