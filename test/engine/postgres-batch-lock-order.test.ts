import { expect, it } from 'vitest';
import { lockOrder } from '../../src/engine/sql/lock-order.js';
import { uniqueQueueName } from '../crash/postgres.js';
import { lockWaiters, postgresProcesses } from './postgres-processes.js';

/**
 * Two processes on one PostgreSQL database, each committing calls of the same two queues in
 * one transaction (group commit), in opposite orders. Each engine here is another process's:
 * its own pool of connections. A plain client holds both queues' locks until both batches
 * wait, then lets them go at once.
 */
const processes = postgresProcesses({ clockMode: 'follow' });
const { client, engine, names } = processes;

it('PostgreSQL: batches of two processes holding calls of the same two queues in opposite orders commit whole, neither rolled back for a deadlock', {
  timeout: 20_000,
}, async (context) => {
  if (processes.skip !== undefined) context.skip(processes.skip);
  const first = uniqueQueueName('lock-order-a');
  const second = uniqueQueueName('lock-order-b');
  names.push(first, second);
  const one = await engine();
  const other = await engine();
  const holder = await client();
  const observer = await client();
  const [oneFirst, oneSecond] = [await one.queue(first), await one.queue(second)];
  const [otherFirst, otherSecond] = [await other.queue(first), await other.queue(second)];
  await holder.query('BEGIN');
  for (const name of [first, second]) {
    await holder.query('SELECT pg_advisory_xact_lock(744503, hashtext($1))', [name]);
  }
  // Each engine's two calls, made in one turn of the event loop, are one transaction.
  const ones = Promise.all([
    oneFirst.publish(1, { id: 'one-a' }),
    oneSecond.publish(1, { id: 'one-b' }),
  ]);
  await lockWaiters(observer, 1);
  const others = Promise.all([
    otherSecond.publish(1, { id: 'other-b' }),
    otherFirst.publish(1, { id: 'other-a' }),
  ]);
  await lockWaiters(observer, 2);
  // Both locks go at once: a batch that took its second queue's lock first would now hold it
  // while waiting for its first queue's, held by the other batch, waiting for that one.
  await holder.query('COMMIT');
  await Promise.all([ones, others]);
  // The jobs one transaction wrote carry its id: each batch committed as one.
  const { rows } = await observer.query<{ id: string; xmin: string }>(
    'SELECT id, xmin::text AS xmin FROM leaseq_jobs WHERE queue = ANY($1) ORDER BY id',
    [[first, second]],
  );
  const transactionOf = new Map(rows.map((row) => [row.id, row.xmin]));
  expect(transactionOf.size).toBe(4);
  expect(transactionOf.get('one-a')).toBe(transactionOf.get('one-b'));
  expect(transactionOf.get('other-a')).toBe(transactionOf.get('other-b'));
});

it('PostgreSQL: a batch holding calls of a queue and of its dead-letter queue takes them in the order a job dying there does', {
  timeout: 20_000,
}, async (context) => {
  if (processes.skip !== undefined) context.skip(processes.skip);
  // The dead-letter queue's name sorts first: name order alone would take it before its source.
  const target = uniqueQueueName('lock-order-a-dead');
  const source = uniqueQueueName('lock-order-b-source');
  names.push(source, target);
  const one = await engine();
  const other = await engine();
  const holder = await client();
  const observer = await client();
  await one.queue(target);
  const [oneSource, oneTarget] = [
    await one.queue(source, { deadLetterQueue: target }),
    await one.queue(target),
  ];
  const otherSource = await other.queue(source);
  await otherSource.publish(1, { id: 'dies' });
  const [delivery] = await otherSource.reserve(1);
  await holder.query('BEGIN');
  for (const name of [source, target]) {
    await holder.query('SELECT pg_advisory_xact_lock(744503, hashtext($1))', [name]);
  }
  const ones = Promise.all([
    oneTarget.publish(2, { id: 'one-dead' }),
    oneSource.publish(2, { id: 'one-source' }),
  ]);
  await lockWaiters(observer, 1);
  // A job dying into the dead-letter queue holds its source's lock while it takes that one's.
  const rejected = otherSource.nack(2, delivery?.token ?? 0, { requeue: false });
  await lockWaiters(observer, 2);
  await holder.query('COMMIT');
  await Promise.all([ones, rejected]);
  expect(await rejected).toBe(true);
  const { rows } = await observer.query<{ id: string; xmin: string }>(
    'SELECT id, xmin::text AS xmin FROM leaseq_jobs WHERE queue = ANY($1) ORDER BY id',
    [[source, target]],
  );
  const transactionOf = new Map(rows.map((row) => [row.id, row.xmin]));
  expect([...transactionOf.keys()]).toEqual(['dies', 'one-dead', 'one-source']);
  expect(transactionOf.get('one-dead')).toBe(transactionOf.get('one-source'));
});

it('lockOrder: with their dead-letter queues, the queues furthest from the end of their chain first, then by name, a loop by name', () => {
  const links = new Map([
    ['z-source', 'b-dead'],
    ['b-dead', 'a-last'],
    ['x', 'y'],
    ['y', 'x'],
  ]);
  expect(lockOrder(['m', 'a-last', 'b-dead', 'z-source'], links)).toEqual([
    'z-source',
    'b-dead',
    'a-last',
    'm',
  ]);
  // A queue's dead-letter queue is taken with it, and a chain counts beyond the batch: two
  // batches over any of these queues take them in one order.
  expect(lockOrder(['a-last', 'z-source'], links)).toEqual(['z-source', 'b-dead', 'a-last']);
  expect(lockOrder(['m', 'b-dead'], links)).toEqual(['b-dead', 'a-last', 'm']);
  expect(lockOrder(['y', 'x', 'c'], links)).toEqual(['x', 'y', 'c']);
});
