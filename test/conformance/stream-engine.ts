import type { Clock } from '../../src/broker/clock.js';
import type { EngineBroker } from '../../src/broker/engine-broker.js';
import { openRemote, type RemoteBroker, type RemoteQueue } from '../../src/client/index.js';
import type { ReceiptBook } from '../../src/client/receipt-book.js';
import {
  ClockError,
  type Operation,
  type Outcome,
  type QueueOptions,
  type ResolvedQueueOptions,
} from '../../src/core/index.js';
import type { Engine, EngineTransaction, QueueHandle } from '../../src/engine/engine.js';
import { OperationHandle } from '../../src/engine/operation-handle.js';
import { Receipts } from '../../src/server/receipts.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

/** The receipt secret of startTestServer: lets the adapter name a token the client never held. */
const TEST_SECRET = 'test-secret-of-at-least-32-characters';

/**
 * Time set from outside before each call: the suite passes `now` explicitly, and over the
 * stream `now` is the server broker's clock. Never read by a sleeping receive here.
 */
class SetClock implements Clock {
  time = 0;
  now(): number {
    return this.time;
  }
  observe(): void {}
  sleep(_ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => signal?.addEventListener('abort', () => resolve()));
  }
}

/**
 * An Engine whose operations travel over the stream: a leaseq server in this process over a
 * storage (its broker on a clock the suite sets), and the remote client over its WebSocket.
 * Each queue call sets the server's clock to the suite's `now`, then runs through the client,
 * the stream and the server's operation path. What cannot travel is taken from the storage
 * directly: the queue's time (to refuse a `now` behind it as the engine would, with its fields),
 * transactions, secrets and wake-ups.
 */
export class StreamEngine implements Engine {
  readonly target: string;
  private readonly underlying: Engine;
  private turn: Promise<unknown> = Promise.resolve();
  private readonly minted = new Receipts(TEST_SECRET);

  private constructor(
    private readonly server: TestServer,
    private readonly clock: SetClock,
    private readonly client: RemoteBroker,
  ) {
    this.underlying = (server.broker as EngineBroker).engine;
    this.target = `the stream to a server over ${this.underlying.target}`;
  }

  static async open(storage: string): Promise<StreamEngine> {
    const clock = new SetClock();
    const server = await startTestServer({ url: storage, clock });
    const client = await openRemote(server.baseUrl, { transport: 'stream' });
    return new StreamEngine(server, clock, client);
  }

  get capabilities() {
    return this.underlying.capabilities;
  }

  async queue(name: string, options?: QueueOptions): Promise<QueueHandle> {
    const remote = await this.client.queue(name, options);
    return new StreamQueueHandle(name, remote, await this.underlying.queue(name), this);
  }

  updateQueue(name: string, options: QueueOptions): Promise<ResolvedQueueOptions> {
    return this.client.updateQueue(name, options);
  }

  listQueues() {
    return this.client.listQueues();
  }

  deleteQueue(name: string): Promise<boolean> {
    return this.client.deleteQueue(name);
  }

  transaction<T>(work: (tx: EngineTransaction) => Promise<T>): Promise<T> {
    if (this.underlying.transaction === undefined) throw new Error('no transactions');
    return this.underlying.transaction(work);
  }

  onWake(listener: (queue: string) => void) {
    return this.underlying.onWake(listener);
  }

  readSecret(name: string) {
    return this.underlying.readSecret(name);
  }

  rotateSecret(name: string, previousUntil: number) {
    return this.underlying.rotateSecret(name, previousUntil);
  }

  async close(): Promise<void> {
    await this.client.close();
    await this.server.close();
  }

  /** Runs `call` at `now`, one call at a time (the clock is the server's, shared). */
  at<T>(now: number, call: () => Promise<T>): Promise<T> {
    const run = this.turn.then(() => {
      this.clock.time = now;
      return call();
    });
    this.turn = run.catch(() => {});
    return run;
  }

  /** A receipt for a token this client never received: the server answers it as stale (R8). */
  mint(queue: string, token: number, jobId: string): string {
    return this.minted.issue(queue, token, jobId);
  }
}

class StreamQueueHandle extends OperationHandle {
  constructor(
    readonly name: string,
    private readonly remote: RemoteQueue,
    private readonly storage: QueueHandle,
    private readonly engine: StreamEngine,
  ) {
    super();
  }

  async execute(now: number, operations: readonly Operation[]): Promise<Outcome[]> {
    const queueTime = await this.storage.queueTime();
    if (!Number.isSafeInteger(now) || now < 0 || now < queueTime) {
      throw new ClockError(now, queueTime);
    }
    await this.knowTokens(operations);
    return this.engine.at(now, () => this.remote.execute(operations));
  }

  /** Receipts for tokens the suite names that this client never received (stale, or another's). */
  private async knowTokens(operations: readonly Operation[]): Promise<void> {
    const tokens = operations.flatMap((operation) =>
      operation.type === 'ack'
        ? operation.tokens
        : operation.type === 'nack' || operation.type === 'extend'
          ? [operation.token]
          : [],
    );
    const unknown = tokens.filter((token) => this.remote.receiptOf(token) === undefined);
    if (unknown.length === 0) return;
    const live = new Map((await this.storage.deliveries()).map((d) => [d.token, d.id]));
    const book = (this.remote as unknown as { book: ReceiptBook }).book;
    for (const token of unknown) {
      const id = live.get(token) ?? '-';
      book.add(token, this.engine.mint(this.name, token, id));
    }
  }

  options() {
    return this.remote.options();
  }

  queueTime() {
    return this.storage.queueTime();
  }

  inspect() {
    return this.remote.inspect();
  }

  deliveries() {
    return this.remote.deliveries();
  }

  deadLetters() {
    return this.remote.deadLetters();
  }

  job(id: string) {
    return this.remote.job(id);
  }

  nextEventAt() {
    return this.storage.nextEventAt();
  }
}
