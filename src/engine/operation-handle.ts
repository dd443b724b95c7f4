import {
  build,
  type DeadLetter,
  type InspectView,
  type JobView,
  type LiveDelivery,
  type NackOptions,
  type Operation,
  type Outcome,
  type PublishInput,
  type PublishResult,
  type ReserveOptions,
  type ResolvedQueueOptions,
  type ResultOf,
  type SessionOptions,
} from '../core/index.js';
import type { QueueHandle } from './engine.js';

/**
 * The friendly methods of a queue handle, each a thin builder of one operation executed
 * through `execute`: an engine implements `execute` and the reads, nothing else. Bad
 * arguments are refused by the builders, the same way on every engine.
 */
export abstract class OperationHandle implements QueueHandle {
  abstract readonly name: string;
  abstract execute(now: number, operations: readonly Operation[]): Promise<Outcome[]>;
  abstract options(): Promise<ResolvedQueueOptions>;
  abstract clock(): Promise<number>;
  abstract inspect(): Promise<InspectView>;
  abstract deliveries(): Promise<LiveDelivery[]>;
  abstract deadLetters(): Promise<DeadLetter[]>;
  abstract job(id: string): Promise<JobView | undefined>;
  abstract nextEventAt(): Promise<number | undefined>;

  /** Executes one operation; its error, if any, is thrown. */
  async run<O extends Operation>(now: number, operation: O): Promise<ResultOf<O>> {
    const [outcome] = await this.execute(now, [operation]);
    if (outcome === undefined) throw new Error('an engine answered no outcome');
    if (!outcome.ok) throw outcome.error;
    return outcome.value as ResultOf<O>;
  }

  async publish(now: number, input: PublishInput = {}): Promise<PublishResult> {
    return (await this.run(now, build.publish(input)))[0] as PublishResult;
  }
  async publishBatch(now: number, inputs: readonly PublishInput[]) {
    return this.run(now, build.publishBatch(inputs));
  }
  async reserve(now: number, options: ReserveOptions = {}) {
    return this.run(now, build.reserve(options));
  }
  async ack(now: number, token: number): Promise<boolean> {
    return (await this.run(now, build.ack(token)))[0] as boolean;
  }
  async ackMany(now: number, tokens: readonly number[]) {
    return this.run(now, build.ackMany(tokens));
  }
  async nack(now: number, token: number, options?: NackOptions) {
    return this.run(now, build.nack(token, options));
  }
  reject(now: number, token: number, options?: NackOptions) {
    return this.nack(now, token, options);
  }
  async extend(now: number, token: number, visibility: number) {
    return this.run(now, build.extend(token, visibility));
  }
  async openSession(now: number, options?: SessionOptions) {
    return this.run(now, build.openSession(options));
  }
  async heartbeat(now: number, sessionId: string): Promise<void> {
    await this.run(now, build.heartbeat(sessionId));
  }
  async closeSession(now: number, sessionId: string) {
    return this.run(now, build.closeSession(sessionId));
  }
  async ackUpTo(now: number, sessionId: string, token: number) {
    return this.run(now, build.ackUpTo(sessionId, token));
  }
  async nackUpTo(now: number, sessionId: string, token: number, options?: NackOptions) {
    return this.run(now, build.nackUpTo(sessionId, token, options));
  }
  async redrive(now: number, ids?: readonly string[]) {
    return this.run(now, build.redrive(ids));
  }
  async purge(now: number, ids?: readonly string[]) {
    return this.run(now, build.purge(ids));
  }
  async purgeQueue(now: number, options?: { dead?: boolean }) {
    return this.run(now, build.purgeQueue(options));
  }
  async stats(now: number) {
    return this.run(now, build.stats());
  }
}
