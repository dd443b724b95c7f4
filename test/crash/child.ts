/**
 * A child process of the crash tests, run with `node --import tsx test/crash/child.ts <json>`.
 *
 * It reports on stdout, one line per event (see protocol.ts), written with a synchronous write
 * right after the promise resolves: a line the parent reads is an operation that had returned
 * before the process died. Intent lines (`publishing`, `acking`) come just before the call, so
 * the parent also knows which operations were in flight when it killed the process.
 */
import { writeSync } from 'node:fs';
import { EngineBroker } from '../../src/broker/index.js';
import type { Delivery } from '../../src/core/index.js';
import { open } from '../../src/open.js';
import {
  between,
  type ChildArgs,
  type ConsumeChildArgs,
  type CrashChildArgs,
  formatLine,
  type Line,
  prng,
} from './protocol.js';

function emit(line: Line): void {
  const bytes = Buffer.from(`${formatLine(line)}\n`);
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(1, bytes, offset);
    } catch (error) {
      // A non-blocking pipe that is full: the parent reads continuously, so try again.
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
    }
  }
}

function fail(message: string): never {
  emit({ kind: 'error', message });
  process.exit(1);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function payloadMatches(delivery: Delivery): boolean {
  const payload = delivery.payload as { id?: unknown } | undefined;
  return payload?.id === delivery.id;
}

/** Publishes (single and batches) and consumes (receive + ack) until killed. */
async function crash(args: CrashChildArgs): Promise<void> {
  const random = prng(args.seed);
  const broker = await open(
    args.url,
    args.durability === undefined ? {} : { durability: args.durability },
  );
  const queue = await broker.queue(args.queue, { visibility: args.visibility });
  emit({ kind: 'ready' });

  let next = 0;
  const publisher = async (): Promise<void> => {
    for (;;) {
      const single = random() < 0.4;
      const size = single ? 1 : between(random, 2, 20);
      const delay = random() < 0.1 ? between(random, 20, 200) : 0;
      const ids = Array.from({ length: size }, () => `${args.idPrefix}${next++}`);
      const inputs = ids.map((id) => ({ id, payload: { id }, delay }));
      emit({ kind: 'publishing', ids });
      const results = single ? [await queue.publish(inputs[0])] : await queue.publishBatch(inputs);
      results.forEach((result, index) => {
        if (result.id !== ids[index] || result.duplicate) {
          fail(`publish of ${ids[index]} returned ${JSON.stringify(result)}`);
        }
      });
      emit({ kind: 'published', ids });
    }
  };

  const ackOne = async (delivery: Delivery): Promise<boolean> => {
    emit({ kind: 'acking', id: delivery.id, token: delivery.token });
    const ok = await queue.ack(delivery.token);
    emit({ kind: 'acked', id: delivery.id, token: delivery.token, ok });
    return ok;
  };

  /** Acks once the lease is surely over: the ack must be refused (R8). */
  const ackLate = async (delivery: Delivery): Promise<void> => {
    await sleep(args.visibility + 50);
    if (await ackOne(delivery)) {
      fail(`ack of token ${delivery.token} (${delivery.id}) after its deadline returned true`);
    }
  };

  const consumer = async (): Promise<void> => {
    for (;;) {
      const deliveries = await queue.receive({ max: between(random, 1, 6), wait: 50 });
      for (const delivery of deliveries) {
        emit({
          kind: 'reserved',
          id: delivery.id,
          token: delivery.token,
          deliveryCount: delivery.deliveryCount,
        });
        if (!payloadMatches(delivery)) {
          fail(`delivery of ${delivery.id} carries ${JSON.stringify(delivery.payload)}`);
        }
      }
      const toAck: Delivery[] = [];
      for (const delivery of deliveries) {
        const choice = random();
        // A few are abandoned (their lease runs out) or acked too late; the rest are acked.
        if (choice < 0.03) continue;
        if (choice < 0.06) void ackLate(delivery).catch(crashed);
        else toAck.push(delivery);
      }
      if (toAck.length > 1 && random() < 0.5) {
        for (const delivery of toAck) {
          emit({ kind: 'acking', id: delivery.id, token: delivery.token });
        }
        const oks = await queue.ackMany(toAck.map((delivery) => delivery.token));
        toAck.forEach((delivery, index) => {
          emit({ kind: 'acked', id: delivery.id, token: delivery.token, ok: oks[index] === true });
        });
      } else {
        await Promise.all(toAck.map(ackOne));
      }
    }
  };

  await Promise.all([
    ...Array.from({ length: args.publishers }, publisher),
    ...Array.from({ length: args.consumers }, consumer),
  ]);
}

/** Waits for the parent's `go` on stdin, consumes until the queue is empty, then exits. */
async function consume(args: ConsumeChildArgs): Promise<void> {
  const random = prng(args.seed);
  const broker = await open(args.url);
  if (!(broker instanceof EngineBroker)) fail('open() did not return an EngineBroker');
  const queue = await broker.queue(args.queue);
  const { visibility, maxLease } = await queue.options();
  if (maxLease !== Number.POSITIVE_INFINITY) fail('the queue must not bound leases (maxLease)');
  emit({ kind: 'ready' });
  await go;

  let count = 0;
  /**
   * An upper bound of the ack's `now`, read after the ack returned. The ack ran at this clock's
   * time or at the queue's, whichever was later (clockMode 'follow'), and another process whose
   * clock runs a little ahead can have raised the queue's. This clock is then behind the
   * reservation: the queue's time, read after the ack and never going back, bounds it instead.
   */
  const ackedBy = async (reservedAt: number): Promise<number> => {
    const clock = broker.clock.now();
    return clock >= reservedAt ? clock : (await queue.stats()).queueTime;
  };
  const report = async (delivery: Delivery, ok: boolean): Promise<void> => {
    count += 1;
    // The deadline is the reservation's `now` plus the visibility (no maxLease).
    const reservedAt = delivery.deadline - visibility;
    const ackedAt = await ackedBy(reservedAt);
    emit({ kind: 'delivery', id: delivery.id, token: delivery.token, reservedAt, ackedAt, ok });
  };
  const loop = async (): Promise<void> => {
    for (;;) {
      // Every job was published before: an empty answer means none is left to take.
      const deliveries = await queue.receive({ max: between(random, 1, args.maxPerReceive) });
      if (deliveries.length === 0) return;
      for (const delivery of deliveries) {
        if (!payloadMatches(delivery)) {
          fail(`delivery of ${delivery.id} carries ${JSON.stringify(delivery.payload)}`);
        }
      }
      if (deliveries.length > 1 && random() < 0.3) {
        const oks = await queue.ackMany(deliveries.map((delivery) => delivery.token));
        await Promise.all(
          deliveries.map((delivery, index) => report(delivery, oks[index] === true)),
        );
      } else {
        await Promise.all(
          deliveries.map(async (delivery) => report(delivery, await queue.ack(delivery.token))),
        );
      }
    }
  };
  await Promise.all(Array.from({ length: args.loops }, loop));
  emit({ kind: 'done', deliveries: count });
  await broker.close();
  process.exit(0);
}

function crashed(error: unknown): never {
  fail(error instanceof Error ? (error.stack ?? error.message) : String(error));
}

/** Resolves on the parent's `go` line. The parent closing stdin means it is gone: exit. */
const go = new Promise<void>((resolve) => {
  let input = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    input += chunk;
    if (input.split('\n').includes('go')) resolve();
  });
  process.stdin.on('end', () => process.exit(4));
});

const args = JSON.parse(process.argv[2] ?? 'null') as ChildArgs;
setTimeout(() => fail(`still running after ${args.lifetimeMs} ms`), args.lifetimeMs).unref();
(args.mode === 'crash' ? crash(args) : consume(args)).catch(crashed);
