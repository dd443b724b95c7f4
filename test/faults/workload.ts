import { RemoteBroker } from '../../src/client/remote-broker.js';
import type { ReceivedDelivery, RemoteQueue } from '../../src/client/remote-queue.js';
import type { PublishResult } from '../../src/core/index.js';
import { LeaseqError } from '../../src/core/index.js';
import { between, prng } from '../crash/protocol.js';
import {
  type DeliveryRecord,
  type ExtendOp,
  HistoryRecorder,
  type Outcome,
  type PublishOp,
  payloadHash,
  type ReceiveOp,
  type SettleOp,
} from '../history/history.js';

export interface WorkloadConfig {
  /** Prefix of every job id: unique per run. */
  label: string;
  queue: string;
  /** Base URLs; producer and consumer i use endpoints[i % n]. */
  endpoints: string[];
  visibilityMs: number;
  producers: number;
  consumers: number;
  seed: number;
  /** How the clients reach the servers: plain HTTP requests or the stream. */
  transport: 'http' | 'stream';
}

/** Errors that surely changed nothing: refused by the server, or never connected. */
const REFUSALS = new Set([
  'INVALID_ARGUMENT',
  'INVALID_RECEIPT',
  'NOT_FOUND',
  'CONFLICT',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'PAYLOAD_TOO_LARGE',
  'TOO_MANY_REQUESTS',
]);

export function classifyHttpError(error: unknown): Outcome {
  if (!(error instanceof LeaseqError)) return 'unknown';
  if (REFUSALS.has(error.code)) return 'fail';
  const cause = (error as { cause?: { code?: unknown } }).cause;
  return cause?.code === 'ECONNREFUSED' ? 'fail' : 'unknown';
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const started = performance.now();

/**
 * Producers and consumers over HTTP or the stream (the real client library) that record every call and
 * answer. Producers publish singles and batches of fresh ids; consumers ack most deliveries and
 * nack, reject, extend or abandon some. In the drain they ack everything.
 */
export class Workload {
  readonly recorder = new HistoryRecorder(() => performance.now() - started, classifyHttpError);
  /** Answers no correct server gives (a fresh id answered as a duplicate). */
  readonly anomalies: string[] = [];
  private publishing = true;
  private consuming = true;
  private draining = false;
  private readonly loops: Promise<void>[] = [];
  private readonly producing: Promise<void>[] = [];
  private readonly brokers: RemoteBroker[] = [];

  constructor(private readonly config: WorkloadConfig) {}

  start(): void {
    const { producers, consumers, seed } = this.config;
    for (let i = 0; i < producers; i++) this.producing.push(this.produce(i, prng(seed + i)));
    this.loops.push(...this.producing);
    for (let i = 0; i < consumers; i++) this.loops.push(this.consume(i, prng(seed + 100 + i)));
  }

  /**
   * Stops publishing and waits for the publishes in flight to answer or fail: a drain's final
   * state read before then could miss a job whose publish returns after it. Consumers ack
   * everything from now on.
   */
  async stopProducing(): Promise<void> {
    this.publishing = false;
    this.draining = true;
    await Promise.all(this.producing);
  }

  /** Stops every loop and waits for them. */
  async stop(): Promise<void> {
    this.publishing = false;
    this.consuming = false;
    await Promise.all(this.loops);
    for (const broker of this.brokers) await broker.close();
  }

  private queueAt(index: number): RemoteQueue {
    const endpoint = this.config.endpoints[index % this.config.endpoints.length] as string;
    const broker = new RemoteBroker(endpoint, {
      transport: this.config.transport,
      timeoutMs: 2000,
      maxWaitPerRequestMs: 300,
    });
    this.brokers.push(broker);
    return broker.handle(this.config.queue);
  }

  private async produce(index: number, random: () => number): Promise<void> {
    const queue = this.queueAt(index);
    const name = `producer-${index}`;
    for (let next = 0; this.publishing; next++) {
      const size = random() < 0.4 ? 1 : between(random, 2, 10);
      const entries = Array.from({ length: size }, (_, at) => {
        const id = `${this.config.label}-p${index}-${next}-${at}`;
        return { id, payload: { id, body: 'x'.repeat(between(random, 1, 200)) } };
      });
      const ids = entries.map((entry) => entry.id);
      try {
        const results = await this.recorder.record<PublishOp, PublishResult[]>(
          name,
          { f: 'publish', ids, payloadHashes: entries.map((entry) => payloadHash(entry.payload)) },
          async () =>
            size === 1 ? [await queue.publish(entries[0])] : queue.publishBatch(entries),
          () => ({}),
        );
        if (results.some((result) => result.duplicate)) {
          this.anomalies.push(`fresh ids answered duplicate: ${ids.join(',')}`);
        }
      } catch {
        await sleep(100);
      }
      await sleep(between(random, 2, 15));
    }
  }

  private async consume(index: number, random: () => number): Promise<void> {
    const queue = this.queueAt(index);
    const name = `consumer-${index}`;
    const visibility = this.config.visibilityMs;
    while (this.consuming) {
      let deliveries: ReceivedDelivery[];
      try {
        deliveries = await this.recorder.record<ReceiveOp, ReceivedDelivery[]>(
          name,
          { f: 'receive', deliveries: [] },
          () => queue.receiveWithReceipts({ max: between(random, 1, 5), wait: 200, visibility }),
          (received) => ({ deliveries: received.map((each) => toRecord(each, visibility)) }),
        );
      } catch {
        await sleep(50);
        continue;
      }
      await Promise.all(deliveries.map((delivery) => this.work(queue, name, delivery, random)));
    }
  }

  /** Works a little, then settles the delivery one way or another. */
  private async work(
    queue: RemoteQueue,
    name: string,
    delivery: ReceivedDelivery,
    random: () => number,
  ): Promise<void> {
    await sleep(between(random, 0, 30));
    const roll = this.draining ? 1 : random();
    const { id, token, receipt } = delivery;
    const settle = (f: SettleOp['f'], call: () => Promise<boolean>) =>
      this.recorder
        .record<SettleOp, boolean>(name, { f, id, token }, call, (applied) => ({ applied }))
        .catch(() => false);
    if (roll < 0.03) return; // abandoned: the lease runs out
    if (roll < 0.08) {
      await settle('nack', () => queue.nackReceipt(receipt, { delay: between(random, 0, 200) }));
      return;
    }
    if (roll < 0.1) {
      await settle('reject', () =>
        queue.nackReceipt(receipt, { requeue: false, reason: 'fault-suite-reject' }),
      );
      return;
    }
    if (roll < 0.15) {
      await this.recorder
        .record<ExtendOp, number | null>(
          name,
          { f: 'extend', id, token },
          () => queue.extendReceipt(receipt, this.config.visibilityMs),
          (deadline) => ({ deadline }),
        )
        .catch(() => null);
      await sleep(between(random, 0, 50));
    }
    await settle('ack', async () => (await queue.ackReceipts([receipt]))[0] === true);
  }
}

/** A delivery as the history keeps it; the lease was granted at deadline − visibility. */
function toRecord(delivery: ReceivedDelivery, visibilityMs: number): DeliveryRecord {
  return {
    id: delivery.id,
    token: delivery.token,
    issuedAt: delivery.deadline - visibilityMs,
    deadline: delivery.deadline,
    deliveryCount: delivery.deliveryCount,
    payloadHash: payloadHash(delivery.payload),
  };
}
