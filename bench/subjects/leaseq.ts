import { type Broker, leaseq, type Queue } from '../lib/leaseq.js';
import { type Payload, postgresVersion, type Subject, untilDeadline } from './subject.js';

export interface LeaseqTarget {
  /** `memory:`, `sqlite:/path`, `postgres://…` or `http://127.0.0.1:PORT`. */
  url: string;
  durability?: 'fsync' | 'os';
  /** Jobs per publishBatch: the HTTP server takes 100 by default. */
  batchSize: number;
  /** Over a server: the stream (the client's default) or plain HTTP requests. */
  transport?: 'stream' | 'http';
}

/** leaseq through its public Broker and Queue interface, in-process, over the stream or HTTP. */
export async function openLeaseq(target: LeaseqTarget): Promise<Subject> {
  const broker = await leaseq.open(target.url, {
    ...(target.durability === undefined ? {} : { durability: target.durability }),
    ...(target.transport === undefined ? {} : { transport: target.transport }),
  });
  return new LeaseqSubject(broker, target.url, target.batchSize);
}

class LeaseqSubject implements Subject {
  private readonly queues = new Map<string, Queue>();

  constructor(
    private readonly broker: Broker,
    private readonly url: string,
    readonly batchSize: number,
  ) {}

  async server(): Promise<string | undefined> {
    return this.url.startsWith('postgres') ? postgresVersion(this.url) : undefined;
  }

  private async queue(name: string): Promise<Queue> {
    let queue = this.queues.get(name);
    if (queue === undefined) {
      queue = await this.broker.queue(name);
      this.queues.set(name, queue);
    }
    return queue;
  }

  async create(name: string): Promise<void> {
    await this.remove(name);
    await this.queue(name);
  }

  async publishBatch(name: string, payloads: readonly Payload[]): Promise<void> {
    await (await this.queue(name)).publishBatch(payloads.map((payload) => ({ payload })));
  }

  async publish(name: string, payload: Payload): Promise<void> {
    await (await this.queue(name)).publish({ payload });
  }

  async drain(name: string, count: number, concurrency: number, deadline: number) {
    const queue = await this.queue(name);
    let taken = 0;
    let acked = 0;
    const consumer = async () => {
      while (taken < count && performance.now() < deadline) {
        taken += 1;
        const [delivery] = await queue.receive({ max: 1 });
        if (delivery === undefined) return;
        if (await queue.ack(delivery.token)) acked += 1;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, consumer));
    return acked;
  }

  async work(name: string, count: number, concurrency: number, deadline: number) {
    const queue = await this.queue(name);
    let acked = 0;
    let finished!: () => void;
    const allAcked = new Promise<void>((resolve) => {
      finished = resolve;
    });
    const worker = await leaseq.work(queue, async () => {}, {
      concurrency,
      logger: leaseq.silentLogger,
    });
    worker.on('outcome', (record) => {
      if (record.outcome === 'acked') acked += 1;
      if (acked >= count) finished();
    });
    const timer = untilDeadline(deadline);
    await Promise.race([allAcked, timer.promise]);
    timer.cancel();
    // Jobs still in hand at the deadline go back at once; they are not counted.
    await worker.close({ timeout: 0 });
    return Math.min(acked, count);
  }

  async consume(
    name: string,
    onJob: (payload: Payload) => void,
    onSettled: (payload: Payload) => void,
  ): Promise<() => Promise<void>> {
    const queue = await this.queue(name);
    const stop = new AbortController();
    const loop = (async () => {
      while (!stop.signal.aborted) {
        const [delivery] = await queue.receive({ wait: 20_000, signal: stop.signal });
        if (delivery === undefined) continue;
        onJob(delivery.payload as Payload);
        await queue.ack(delivery.token);
        onSettled(delivery.payload as Payload);
      }
    })();
    return async () => {
      stop.abort();
      await loop;
    };
  }

  async remove(name: string): Promise<void> {
    this.queues.delete(name);
    await this.broker.deleteQueue(name);
  }

  close(): Promise<void> {
    return this.broker.close();
  }
}
