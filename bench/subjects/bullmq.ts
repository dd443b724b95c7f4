import { loadDependency, type Payload, type Subject, untilDeadline } from './subject.js';

// The part of BullMQ's API this file uses (the package's typecheck does not install it).
interface Connection {
  host: string;
  port: number;
  maxRetriesPerRequest: null;
}
interface Job {
  data: Payload;
}
interface BullQueue {
  add(jobName: string, data: Payload): Promise<unknown>;
  addBulk(jobs: { name: string; data: Payload }[]): Promise<unknown>;
  obliterate(options: { force: boolean }): Promise<void>;
  waitUntilReady(): Promise<unknown>;
  close(): Promise<void>;
}
interface BullWorker {
  on(event: 'completed', listener: (job: Job) => void): void;
  on(event: 'error', listener: (error: Error) => void): void;
  waitUntilReady(): Promise<unknown>;
  close(force?: boolean): Promise<void>;
}
interface Bullmq {
  Queue: new (
    name: string,
    options: { connection: Connection; defaultJobOptions: { removeOnComplete: boolean } },
  ) => BullQueue;
  Worker: new (
    name: string,
    processor: (job: Job) => Promise<void>,
    options: { connection: Connection; concurrency: number },
  ) => BullWorker;
}

/** BullMQ over ioredis: jobs removed on completion, one Worker with the concurrency asked. */
export async function openBullmq(redisUrl: string): Promise<Subject> {
  const bullmq = await loadDependency<Bullmq>('bullmq');
  const { hostname, port } = new URL(redisUrl);
  return new BullmqSubject(bullmq, {
    host: hostname,
    port: Number(port || 6379),
    maxRetriesPerRequest: null,
  });
}

class BullmqSubject implements Subject {
  readonly batchSize = 1000;
  private readonly queues = new Map<string, BullQueue>();

  constructor(
    private readonly bullmq: Bullmq,
    private readonly connection: Connection,
  ) {}

  server(): Promise<string> {
    return redisServer(this.connection);
  }

  private async queue(name: string): Promise<BullQueue> {
    let queue = this.queues.get(name);
    if (queue === undefined) {
      queue = new this.bullmq.Queue(name, {
        connection: this.connection,
        defaultJobOptions: { removeOnComplete: true },
      });
      await queue.waitUntilReady();
      this.queues.set(name, queue);
    }
    return queue;
  }

  async create(name: string): Promise<void> {
    await (await this.queue(name)).obliterate({ force: true });
  }

  async publishBatch(name: string, payloads: readonly Payload[]): Promise<void> {
    await (await this.queue(name)).addBulk(payloads.map((data) => ({ name: 'job', data })));
  }

  async publish(name: string, payload: Payload): Promise<void> {
    await (await this.queue(name)).add('job', payload);
  }

  /** BullMQ's drain already runs through its Worker: W2 and W4 are the same consumer. */
  work(name: string, count: number, concurrency: number, deadline: number) {
    return this.drain(name, count, concurrency, deadline);
  }

  async drain(name: string, count: number, concurrency: number, deadline: number) {
    let completed = 0;
    let done!: () => void;
    const finished = new Promise<void>((resolve) => {
      done = resolve;
    });
    const worker = new this.bullmq.Worker(name, async () => {}, {
      connection: this.connection,
      concurrency,
    });
    worker.on('error', (error) => console.error(`bullmq worker: ${error.message}`));
    worker.on('completed', () => {
      completed += 1;
      if (completed === count) done();
    });
    const timer = untilDeadline(deadline);
    await Promise.race([finished, timer.promise]);
    timer.cancel();
    await worker.close();
    return Math.min(completed, count);
  }

  async consume(
    name: string,
    onJob: (payload: Payload) => void,
    onSettled: (payload: Payload) => void,
  ): Promise<() => Promise<void>> {
    const worker = new this.bullmq.Worker(
      name,
      async (job) => {
        onJob(job.data);
      },
      { connection: this.connection, concurrency: 1 },
    );
    worker.on('error', (error) => console.error(`bullmq worker: ${error.message}`));
    worker.on('completed', (job) => onSettled(job.data));
    await worker.waitUntilReady();
    return () => worker.close();
  }

  async remove(name: string): Promise<void> {
    const queue = await this.queue(name);
    await queue.obliterate({ force: true });
    await queue.close();
    this.queues.delete(name);
  }

  async close(): Promise<void> {
    for (const queue of this.queues.values()) await queue.close();
    this.queues.clear();
  }
}

/**
 * The server's version and whether it writes what it is told to disk (its append-only file,
 * and how often that is synced), from INFO and CONFIG GET over a plain socket: with the AOF
 * off, a job added or completed is in memory only when BullMQ's call returns.
 */
async function redisServer(connection: Connection): Promise<string> {
  const { createConnection } = await import('node:net');
  return new Promise((resolve) => {
    const socket = createConnection({ host: connection.host, port: connection.port });
    let text = '';
    const finish = () => {
      socket.destroy();
      resolve(describeRedis(text));
    };
    socket.setTimeout(2000, finish);
    socket.on('error', finish);
    socket.on('connect', () =>
      socket.write('INFO server\r\nINFO persistence\r\nCONFIG GET appendfsync\r\nPING\r\n'),
    );
    socket.on('data', (chunk) => {
      text += chunk.toString();
      // The last reply: every one before it is in.
      if (text.endsWith('+PONG\r\n')) finish();
    });
  });
}

/** `Redis 7.0.15 with the AOF off`, from the replies to INFO and CONFIG GET appendfsync. */
export function describeRedis(replies: string): string {
  const version = /redis_version:([^\r\n]+)/.exec(replies)?.[1] ?? '?';
  const aof = /aof_enabled:(\d)/.exec(replies)?.[1];
  const fsync = /appendfsync\r\n\$\d+\r\n([^\r\n]+)/.exec(replies)?.[1] ?? '?';
  if (aof === undefined) return `Redis ${version}`;
  return `Redis ${version} with the AOF ${aof === '1' ? `on (appendfsync ${fsync})` : 'off'}`;
}
