import {
  ClosedError,
  LeaseQueue,
  NotFoundError,
  type PublishInput,
  type QueueOptions,
  type ResolvedQueueOptions,
} from '../../core/index.js';
import type {
  Engine,
  EngineCapabilities,
  QueueHandle,
  QueueInfo,
  WakeListener,
} from '../engine.js';
import { decodePayload, encodePayload } from '../payload.js';
import { checkQueueName, checkSameOptions } from '../queue-options.js';
import { WakeHub } from '../wake-hub.js';

/**
 * The reference engine: each queue is a pure `LeaseQueue` in this process's memory.
 * Nothing survives the process.
 */
export class MemoryEngine implements Engine {
  readonly target = 'memory:';
  readonly capabilities: EngineCapabilities = {
    durable: false,
    shared: false,
    transactions: false,
    crossProcessWakeups: false,
  };
  private readonly queues = new Map<string, LeaseQueue>();
  /** Counters of deleted queues, continued when the name is used again (R6). */
  private readonly floors = new Map<string, { nextToken: number; nextSession: number }>();
  private readonly wakes = new WakeHub();
  private closed = false;

  async queue(name: string, options?: QueueOptions): Promise<QueueHandle> {
    this.checkOpen();
    checkQueueName(name);
    let core = this.queues.get(name);
    if (core === undefined) {
      core = new LeaseQueue(options);
      const floor = this.floors.get(name);
      if (floor !== undefined) core.continueCounters(floor);
      this.queues.set(name, core);
    } else {
      checkSameOptions(name, core.options, options);
    }
    return new MemoryQueue(name, core, this.wakes, () => this.checkOpen());
  }

  async updateQueue(name: string, options: QueueOptions): Promise<ResolvedQueueOptions> {
    this.checkOpen();
    return this.existing(name).reconfigure(options);
  }

  async listQueues(): Promise<QueueInfo[]> {
    this.checkOpen();
    return [...this.queues].map(([name, core]) => ({ name, options: core.options }));
  }

  async deleteQueue(name: string): Promise<boolean> {
    this.checkOpen();
    checkQueueName(name);
    const core = this.queues.get(name);
    if (core === undefined) return false;
    this.floors.set(name, core.numbering());
    return this.queues.delete(name);
  }

  onWake(listener: WakeListener): () => void {
    return this.wakes.add(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private existing(name: string): LeaseQueue {
    checkQueueName(name);
    const core = this.queues.get(name);
    if (core === undefined) throw new NotFoundError(`queue ${name} does not exist`);
    return core;
  }

  private checkOpen(): void {
    if (this.closed) throw new ClosedError(`engine ${this.target} is closed`);
  }
}

/** LeaseQueue's methods as promises, with wake-ups after anything that makes jobs ready. */
class MemoryQueue implements QueueHandle {
  constructor(
    readonly name: string,
    private readonly core: LeaseQueue,
    private readonly wakes: WakeHub,
    private readonly checkOpen: () => void,
  ) {}

  private run<T>(action: (core: LeaseQueue) => T, wakes = false): Promise<T> {
    try {
      this.checkOpen();
      const result = action(this.core);
      if (wakes) this.wakes.wake(this.name);
      return Promise.resolve(result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  options() {
    return this.run((q) => q.options);
  }
  clock() {
    return this.run((q) => q.clock);
  }
  inspect() {
    return this.run((q) => q.inspect());
  }
  deliveries() {
    return this.run((q) => q.deliveries());
  }
  publish(now: number, input?: PublishInput) {
    return this.run((q) => q.publish(now, input && asStored(input, 'job')), true);
  }
  publishBatch(now: number, inputs: readonly PublishInput[]) {
    return this.run(
      (q) =>
        q.publishBatch(
          now,
          Array.isArray(inputs)
            ? inputs.map((input, index) => asStored(input, `jobs[${index}]`))
            : inputs,
        ),
      true,
    );
  }
  reserve(now: number, options?: Parameters<LeaseQueue['reserve']>[1]) {
    return this.run((q) =>
      q
        .reserve(now, options)
        .map((delivery) => ({ ...delivery, payload: fromStored(delivery.payload) })),
    );
  }
  ack(now: number, token: number) {
    return this.run((q) => q.ack(now, token));
  }
  ackMany(now: number, tokens: readonly number[]) {
    return this.run((q) => q.ackMany(now, tokens));
  }
  nack(now: number, token: number, options?: Parameters<LeaseQueue['nack']>[2]) {
    return this.run((q) => q.nack(now, token, options), true);
  }
  reject(now: number, token: number, options?: Parameters<LeaseQueue['reject']>[2]) {
    return this.run((q) => q.reject(now, token, options), true);
  }
  extend(now: number, token: number, visibility: number) {
    return this.run((q) => q.extend(now, token, visibility));
  }
  openSession(now: number, options?: Parameters<LeaseQueue['openSession']>[1]) {
    return this.run((q) => q.openSession(now, options));
  }
  heartbeat(now: number, sessionId: string) {
    return this.run((q) => q.heartbeat(now, sessionId));
  }
  closeSession(now: number, sessionId: string) {
    return this.run((q) => q.closeSession(now, sessionId), true);
  }
  ackUpTo(now: number, sessionId: string, token: number) {
    return this.run((q) => q.ackUpTo(now, sessionId, token));
  }
  nackUpTo(
    now: number,
    sessionId: string,
    token: number,
    options?: Parameters<LeaseQueue['nackUpTo']>[3],
  ) {
    return this.run((q) => q.nackUpTo(now, sessionId, token, options), true);
  }
  deadLetters() {
    return this.run((q) =>
      q.deadLetters().map((dead) => ({ ...dead, payload: fromStored(dead.payload) })),
    );
  }
  redrive(now: number, ids?: readonly string[]) {
    return this.run((q) => q.redrive(now, ids), true);
  }
  purge(now: number, ids?: readonly string[]) {
    return this.run((q) => q.purge(now, ids));
  }
  stats(now: number) {
    return this.run((q) => q.stats(now));
  }
  job(id: string) {
    return this.run((q) => {
      const job = q.job(id);
      return job && { ...job, payload: fromStored(job.payload) };
    });
  }
  nextEventAt() {
    return this.run((q) => q.nextEventAt());
  }
}

/**
 * The core keeps the payload as JSON text, as the SQL engines do: the queue holds a copy the
 * publisher cannot change afterwards, and each consumer gets its own. A non-object input is
 * passed through for the core to refuse.
 */
function asStored(input: PublishInput, at: string): PublishInput {
  if (typeof input !== 'object' || input === null || input.payload === undefined) return input;
  return { ...input, payload: encodePayload(input.payload, at) };
}

function fromStored(payload: unknown): unknown {
  return typeof payload === 'string' ? decodePayload(payload) : undefined;
}
