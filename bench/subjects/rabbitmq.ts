import { loadDependency, type Payload, type Subject, untilDeadline } from './subject.js';

// The part of amqplib's API this file uses (the package's typecheck does not install it).
interface Message {
  content: Buffer;
}
interface Channel {
  assertQueue(name: string, options: { durable: boolean; arguments?: object }): Promise<unknown>;
  checkQueue(name: string): Promise<{ messageCount: number }>;
  deleteQueue(name: string): Promise<unknown>;
  prefetch(count: number): Promise<unknown>;
  consume(
    name: string,
    onMessage: (message: Message | null) => void,
    options: { noAck: boolean },
  ): Promise<{ consumerTag: string }>;
  cancel(consumerTag: string): Promise<unknown>;
  ack(message: Message): void;
  close(): Promise<void>;
}
interface ConfirmChannel extends Channel {
  sendToQueue(
    name: string,
    content: Buffer,
    options: { persistent: boolean },
    confirmed: (error: unknown) => void,
  ): boolean;
}
interface Connection {
  readonly connection: { serverProperties: { product?: string; version?: string } };
  createChannel(): Promise<Channel>;
  createConfirmChannel(): Promise<ConfirmChannel>;
  close(): Promise<void>;
}
interface Amqplib {
  connect(url: string, socketOptions: { noDelay: boolean }): Promise<Connection>;
}

/**
 * Durable queues (classic or quorum), persistent messages, publisher confirms (a publish
 * counts once the broker confirmed it) and manual acks with a prefetch of the concurrency.
 * Publishers and consumers use separate connections, with Nagle's algorithm off as in the
 * other systems' clients.
 */
export async function openRabbitmq(
  url: string,
  kind: 'classic' | 'quorum',
  amqplib?: Amqplib,
): Promise<Subject> {
  amqplib ??= await loadDependency<Amqplib>('amqplib');
  // amqplib alone leaves Nagle's algorithm on (ioredis, pg, ws and node:http turn it off): a
  // frame written right after another, such as the cancel after the last ack, would then wait
  // for the broker's delayed TCP acknowledgement, about 40 ms.
  const publisher = await amqplib.connect(url, { noDelay: true });
  const consumer = await amqplib.connect(url, { noDelay: true });
  const confirms = await publisher.createConfirmChannel();
  const admin = await publisher.createChannel();
  return new RabbitmqSubject(kind, publisher, consumer, confirms, admin);
}

class RabbitmqSubject implements Subject {
  readonly batchSize = 1000;

  constructor(
    private readonly kind: 'classic' | 'quorum',
    private readonly publisher: Connection,
    private readonly consumer: Connection,
    private readonly confirms: ConfirmChannel,
    private readonly admin: Channel,
  ) {}

  async server(): Promise<string> {
    const server = this.publisher.connection.serverProperties;
    return `${server.product ?? 'AMQP server'} ${server.version ?? '?'}`;
  }

  async create(name: string): Promise<void> {
    await this.admin.deleteQueue(name);
    await this.admin.assertQueue(name, {
      durable: true,
      ...(this.kind === 'quorum' ? { arguments: { 'x-queue-type': 'quorum' } } : {}),
    });
  }

  private send(name: string, payload: Payload): Promise<void> {
    return new Promise((resolve, reject) => {
      this.confirms.sendToQueue(
        name,
        Buffer.from(JSON.stringify(payload)),
        { persistent: true },
        (error) =>
          error ? reject(new Error(`publish not confirmed: ${String(error)}`)) : resolve(),
      );
    });
  }

  async publishBatch(name: string, payloads: readonly Payload[]): Promise<void> {
    // No batch call in AMQP 0-9-1: the batch is pipelined and counts once all are confirmed.
    await Promise.all(payloads.map((payload) => this.send(name, payload)));
  }

  publish(name: string, payload: Payload): Promise<void> {
    return this.send(name, payload);
  }

  /** The drain already is amqplib's consumer with a prefetch: W2 and W4 are the same. */
  work(name: string, count: number, concurrency: number, deadline: number) {
    return this.drain(name, count, concurrency, deadline);
  }

  async drain(name: string, count: number, concurrency: number, deadline: number) {
    const channel = await this.consumer.createChannel();
    await channel.prefetch(concurrency);
    let acked = 0;
    let done!: () => void;
    const finished = new Promise<void>((resolve) => {
      done = resolve;
    });
    const { consumerTag } = await channel.consume(
      name,
      (message) => {
        if (message === null || acked >= count) return;
        channel.ack(message);
        acked += 1;
        if (acked === count) done();
      },
      { noAck: false },
    );
    const timer = untilDeadline(deadline);
    await Promise.race([finished, timer.promise]);
    timer.cancel();
    await channel.cancel(consumerTag);
    // One round trip after the last ack: the broker has read every ack before it answers.
    await channel.checkQueue(name);
    await channel.close();
    return acked;
  }

  async consume(
    name: string,
    onJob: (payload: Payload) => void,
    onSettled: (payload: Payload) => void,
  ): Promise<() => Promise<void>> {
    const channel = await this.consumer.createChannel();
    await channel.prefetch(1);
    const { consumerTag } = await channel.consume(
      name,
      (message) => {
        if (message === null) return;
        const payload = JSON.parse(message.content.toString()) as Payload;
        onJob(payload);
        channel.ack(message);
        onSettled(payload);
      },
      { noAck: false },
    );
    return async () => {
      await channel.cancel(consumerTag);
      await channel.close();
    };
  }

  async remove(name: string): Promise<void> {
    await this.admin.deleteQueue(name);
  }

  async close(): Promise<void> {
    await this.publisher.close();
    await this.consumer.close();
  }
}
