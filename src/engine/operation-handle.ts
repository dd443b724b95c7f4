import {
  build,
  type DeadLetter,
  type DeadLetterPage,
  type DeadLetterPageOptions,
  type Delivery,
  type DeliveryPage,
  type DeliveryPageOptions,
  type InspectOptions,
  type InspectView,
  type JobView,
  type LiveDelivery,
  type MoveJobsOptions,
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
  abstract queueTime(): Promise<number>;
  abstract inspect(options?: InspectOptions): Promise<InspectView>;
  abstract deliveries(): Promise<LiveDelivery[]>;
  abstract deliveryPage(options?: DeliveryPageOptions): Promise<DeliveryPage>;
  abstract deadLetters(): Promise<DeadLetter[]>;
  abstract deadLetterPage(options?: DeadLetterPageOptions): Promise<DeadLetterPage>;
  abstract job(id: string): Promise<JobView | undefined>;
  abstract nextEventAt(): Promise<number | undefined>;

  /** Executes one operation; its error, if any, rejects. */
  run<O extends Operation>(now: number, operation: O): Promise<ResultOf<O>> {
    return this.executeOne(now, operation) as Promise<ResultOf<O>>;
  }

  /**
   * One operation's value, or its error as a rejection: `execute` of a batch of one. An engine
   * that can answer one operation more cheaply than a batch overrides it (same semantics).
   */
  protected executeOne(now: number, operation: Operation): Promise<unknown> {
    return this.execute(now, [operation]).then(unwrap);
  }

  /**
   * The first value of one operation whose answer is a list of one (a publish of one job, an
   * ack of one token). An engine may override it to answer without a further promise.
   */
  protected executeFirst(now: number, operation: Operation): Promise<unknown> {
    return this.executeOne(now, operation).then(first);
  }

  /** Builds an operation and runs it: a refused argument rejects, as every engine call does. */
  private build<O extends Operation>(now: number, make: () => O): Promise<ResultOf<O>> {
    let operation: O;
    try {
      operation = make();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.run(now, operation);
  }

  // The calls of every job (publish, reserve, ack) build their operation without a closure.

  publish(now: number, input: PublishInput = {}): Promise<PublishResult> {
    let operation: Operation;
    try {
      operation = build.publish(input);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.executeFirst(now, operation) as Promise<PublishResult>;
  }
  publishBatch(now: number, inputs: readonly PublishInput[]): Promise<PublishResult[]> {
    let operation: Operation;
    try {
      operation = build.publishBatch(inputs);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.executeOne(now, operation) as Promise<PublishResult[]>;
  }
  /** `alsoRead`: option names the caller reads itself (see `build.reserve`). */
  reserve(
    now: number,
    options: ReserveOptions = {},
    alsoRead?: ReadonlySet<string>,
  ): Promise<Delivery[]> {
    let operation: Operation;
    try {
      operation = build.reserve(options, alsoRead);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.executeOne(now, operation) as Promise<Delivery[]>;
  }
  ack(now: number, token: number): Promise<boolean> {
    let operation: Operation;
    try {
      operation = build.ack(token);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.executeFirst(now, operation) as Promise<boolean>;
  }
  ackMany(now: number, tokens: readonly number[]) {
    return this.build(now, () => build.ackMany(tokens));
  }
  nack(now: number, token: number, options?: NackOptions) {
    return this.build(now, () => build.nack(token, options));
  }
  reject(now: number, token: number, options?: NackOptions) {
    return this.nack(now, token, options);
  }
  extend(now: number, token: number, visibility: number) {
    return this.build(now, () => build.extend(token, visibility));
  }
  openSession(now: number, options?: SessionOptions) {
    return this.build(now, () => build.openSession(options));
  }
  async heartbeat(now: number, sessionId: string): Promise<void> {
    await this.build(now, () => build.heartbeat(sessionId));
  }
  closeSession(now: number, sessionId: string) {
    return this.build(now, () => build.closeSession(sessionId));
  }
  ackUpTo(now: number, sessionId: string, token: number) {
    return this.build(now, () => build.ackUpTo(sessionId, token));
  }
  nackUpTo(now: number, sessionId: string, token: number, options?: NackOptions) {
    return this.build(now, () => build.nackUpTo(sessionId, token, options));
  }
  redrive(now: number, ids?: readonly string[]) {
    return this.build(now, () => build.redrive(ids));
  }
  purge(now: number, ids?: readonly string[]) {
    return this.build(now, () => build.purge(ids));
  }
  purgeQueue(
    now: number,
    options?: {
      /** true: the dead jobs are removed too. Default false. */
      dead?: boolean;
    },
  ) {
    return this.build(now, () => build.purgeQueue(options));
  }
  moveJobs(now: number, options?: MoveJobsOptions) {
    return this.build(now, () => build.moveJobs(options));
  }
  cancel(
    now: number,
    id: string,
    options?: {
      /** true: the job is removed rather than dead with reason `cancelled`. Default false. */
      remove?: boolean;
    },
  ) {
    return this.build(now, () => build.cancel(id, options));
  }
  stats(now: number) {
    return this.build(now, () => build.stats());
  }
}

function unwrap(outcomes: Outcome[]): unknown {
  const outcome = outcomes[0];
  if (outcome === undefined) throw new Error('an engine answered no outcome');
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

function first(values: unknown): unknown {
  return (values as readonly unknown[])[0];
}
