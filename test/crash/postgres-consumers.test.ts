import { afterEach, describe, expect, it } from 'vitest';
import type { Broker } from '../../src/broker/index.js';
import { open } from '../../src/open.js';
import { deleteQueue, POSTGRES_URL, postgresSkipReason, uniqueQueueName } from './postgres.js';
import { Child, describeExit, killStartedChildren, runSeed } from './processes.js';
import type { Line } from './protocol.js';

/**
 * I5, I6 and R8 across processes: three (and four) child processes, each an `open(url)` Broker
 * with eight concurrent receive/ack loops, consume one PostgreSQL queue at once. The visibility (60 s) is
 * far longer than the test, so no lease can run out: every job must be delivered once and acked
 * once, and no two deliveries of a job may be live at the same time.
 */
const JOBS = 3000;
const LOOPS = 8;
const VISIBILITY = 60_000;

type DeliveryLine = Extract<Line, { kind: 'delivery' }> & { child: number };

const queues: string[] = [];
const brokers: Broker[] = [];

afterEach(async () => {
  await killStartedChildren();
  await Promise.all(brokers.splice(0).map((broker) => broker.close()));
  for (const name of queues.splice(0)) await deleteQueue(name);
});

describe.each([3, 4])('PostgreSQL: %i consumer processes on one queue', (PROCESSES) => {
  it('never delivers a job twice at once and acks each exactly once', {
    timeout: 20_000,
  }, async (context) => {
    const skip = await postgresSkipReason();
    if (skip !== undefined) context.skip(skip);
    const seed = runSeed();
    const name = uniqueQueueName('consumers');
    queues.push(name);
    const broker = await open(POSTGRES_URL);
    brokers.push(broker);
    const queue = await broker.queue(name, { visibility: VISIBILITY });
    const ids = Array.from({ length: JOBS }, (_, index) => `j${index}`);
    for (let start = 0; start < JOBS; start += 500) {
      await queue.publishBatch(
        ids.slice(start, start + 500).map((id) => ({ id, payload: { id } })),
      );
    }

    const children = Array.from(
      { length: PROCESSES },
      (_, index) =>
        new Child(`consumer ${index}`, {
          mode: 'consume',
          url: POSTGRES_URL,
          queue: name,
          seed: seed + index,
          loops: LOOPS,
          maxPerReceive: 4,
          lifetimeMs: 15_000,
        }),
    );
    await Promise.all(children.map((child) => child.waitFor('ready', 10_000)));
    const started = Date.now();
    for (const child of children) child.send('go\n');
    const exits = await Promise.all(children.map((child) => child.closedWithin(15_000)));
    const elapsed = Date.now() - started;

    const problems: string[] = [];
    const deliveries: DeliveryLine[] = [];
    children.forEach((child, index) => {
      const exit = exits[index];
      if (exit?.code !== 0) {
        problems.push(`${child.label} ended by ${exit && describeExit(exit)}: ${child.stderr}`);
      }
      for (const text of child.malformed) problems.push(`${child.label}: malformed line ${text}`);
      for (const line of child.lines) {
        if (line.kind === 'delivery') deliveries.push({ ...line, child: index });
        if (line.kind === 'error') problems.push(`${child.label}: ${line.message}`);
      }
      if (!child.lines.some((line) => line.kind === 'done')) {
        problems.push(`${child.label} never reported done`);
      }
    });
    problems.push(...checkDeliveries(ids, deliveries));

    const perChild = children.map(
      (_, index) => deliveries.filter((delivery) => delivery.child === index).length,
    );
    console.info(
      `postgres consumers: seed ${seed}, ${JOBS} jobs, ${PROCESSES}×${LOOPS} loops, ` +
        `${deliveries.length} deliveries (${perChild.join('/')} per process), ${elapsed} ms`,
    );
    expect(problems.slice(0, 20), `seed ${seed}`).toEqual([]);
    const view = await queue.inspect();
    expect([view.ready, view.delayed, view.active, view.dead]).toEqual([[], [], [], []]);
    // The counts acks made on every node (tallied apart from the queue row) add up.
    const stats = await queue.stats();
    expect([stats.ready, stats.active, stats.acks, stats.deliveries]).toEqual([0, 0, JOBS, JOBS]);
  });
});

/** Every violation of I5, I6 or R8 in what the children reported. */
function checkDeliveries(ids: readonly string[], deliveries: readonly DeliveryLine[]): string[] {
  const problems: string[] = [];
  const show = (delivery: DeliveryLine) =>
    `token ${delivery.token} of ${delivery.id} (process ${delivery.child}, reserved at ${delivery.reservedAt}, ack ${delivery.ok} by ${delivery.ackedAt})`;

  // I5: no token handed out twice, across processes.
  const byToken = new Map<number, DeliveryLine>();
  for (const delivery of deliveries) {
    const before = byToken.get(delivery.token);
    if (before !== undefined)
      problems.push(`token handed out twice: ${show(before)}; ${show(delivery)}`);
    byToken.set(delivery.token, delivery);
  }
  // R2/R6: later tokens are never handed out at an earlier `now`, whichever process asks.
  const inTokenOrder = [...deliveries].sort((a, b) => a.token - b.token);
  for (let i = 1; i < inTokenOrder.length; i++) {
    const before = inTokenOrder[i - 1] as DeliveryLine;
    const after = inTokenOrder[i] as DeliveryLine;
    if (after.reservedAt < before.reservedAt) {
      problems.push(`time went back between tokens: ${show(before)}; ${show(after)}`);
    }
  }

  const byId = new Map<string, DeliveryLine[]>();
  for (const delivery of deliveries) {
    byId.set(delivery.id, [...(byId.get(delivery.id) ?? []), delivery]);
  }
  const known = new Set(ids);
  for (const id of byId.keys()) {
    if (!known.has(id)) problems.push(`unexpected job ${id} delivered`);
  }
  for (const id of ids) {
    const list = (byId.get(id) ?? []).sort((a, b) => a.token - b.token);
    const acked = list.filter((delivery) => delivery.ok);
    // R8: exactly one ack returned true for each job, summed over the processes.
    if (acked.length !== 1) {
      problems.push(`${id} acked ${acked.length} times: ${list.map(show).join('; ')}`);
    }
    // No lease could run out, so a second delivery means two live deliveries at once (I6).
    if (list.length > 1) {
      problems.push(`${id} delivered ${list.length} times: ${list.map(show).join('; ')}`);
    }
    // I6: the live intervals [reservedAt, ackedAt] of acked deliveries never overlap.
    for (let i = 1; i < acked.length; i++) {
      const before = acked[i - 1] as DeliveryLine;
      const after = acked[i] as DeliveryLine;
      if (after.reservedAt < before.ackedAt) {
        problems.push(`${id} had two live deliveries: ${show(before)}; ${show(after)}`);
      }
    }
    for (const delivery of list) {
      if (delivery.ackedAt < delivery.reservedAt) {
        problems.push(`${id} acked before it was reserved: ${show(delivery)}`);
      }
    }
  }
  return problems;
}
