import {
  type NackOptions,
  type PublishInput,
  type ReserveOptions,
  type SessionOptions,
  ValidationError,
} from '../../core/index.js';
import {
  checkIdList,
  checkPublishInputs,
  checkTokens,
  Problems,
  resolveNackOptions,
  resolveSessionOptions,
  show,
} from '../../core/validate.js';
import type { QueueHandle } from '../engine.js';
import { encodePayload } from '../payload.js';
import type { BatchContext, GroupCommitExecutor } from './executor.js';
import { type QueueAccess, queueOps, wakeOnCommit } from './queue-access.js';
import type { EncodedPublish, QueueOps } from './queue-ops.js';
import type { SqlConnection } from './sql-connection.js';

/**
 * One queue of a SQL engine. Arguments are checked here, before anything is sent; the work
 * then runs inside a group-committed transaction that holds the queue's row.
 */
export class SqlQueue implements QueueHandle {
  constructor(
    readonly name: string,
    private readonly executor: GroupCommitExecutor,
    private readonly access: QueueAccess,
  ) {}

  /** Runs `action` on the queue in a transaction; `wakes` when it may make jobs ready. */
  private run<T>(action: (ops: QueueOps) => Promise<T>, wakes = false): Promise<T> {
    return this.executor.submit(async (connection, batch) => {
      const result = await action(await this.ops(connection, batch));
      if (wakes) await wakeOnCommit(this.access, connection, batch, this.name);
      return result;
    });
  }

  options() {
    return this.run(async (ops) => ({ ...ops.q.options }));
  }

  clock() {
    return this.run(async (ops) => ops.q.clock);
  }

  inspect() {
    return this.run((ops) => ops.inspect());
  }

  deliveries() {
    return this.run((ops) => ops.deliveries());
  }

  async publish(now: number, input: PublishInput = {}) {
    const [encoded] = encodePublishes([input], 'job');
    const [result] = await this.run((ops) => ops.publish(now, [encoded as EncodedPublish]), true);
    return result as { id: string; duplicate: boolean };
  }

  publishBatch(now: number, inputs: readonly PublishInput[]) {
    if (!Array.isArray(inputs)) {
      return Promise.reject(new ValidationError(`jobs must be an array, got ${show(inputs)}`));
    }
    try {
      const encoded = encodePublishes(inputs, 'jobs');
      return this.run((ops) => ops.publish(now, encoded), true);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  reserve(now: number, options: ReserveOptions = {}) {
    const problems = new Problems();
    if (!problems.object('options', options)) return Promise.reject(problemsError(problems));
    const max = options.max ?? 1;
    problems.positiveInteger('max', max);
    if (options.visibility !== undefined)
      problems.positiveInteger('visibility', options.visibility);
    if (problems.list.length > 0) return Promise.reject(problemsError(problems));
    const { visibility, session } = options;
    // Concurrent reserves at one tick with the same options take their jobs in one statement.
    return this.executor.submitMerged({
      key: `reserve\u0000${this.name}\u0000${now}\u0000${visibility}\u0000${session}`,
      arg: max,
      run: async (connection, batch, maxes: number[]) => {
        const ops = await this.ops(connection, batch);
        const total = maxes.reduce((sum, each) => sum + each, 0);
        const deliveries = await ops.reserve(now, { max: total, visibility, session });
        return maxes.map((each) => deliveries.splice(0, each));
      },
    });
  }

  async ack(now: number, token: number) {
    checkTokens([token]);
    const [acked] = await this.ackTokens(now, [token]);
    return acked as boolean;
  }

  async ackMany(now: number, tokens: readonly number[]) {
    if (!Array.isArray(tokens)) {
      throw new ValidationError(`tokens must be an array, got ${show(tokens)}`);
    }
    checkTokens(tokens);
    return this.ackTokens(now, tokens);
  }

  /** Concurrent acks at one tick are settled in one statement. */
  private ackTokens(now: number, tokens: readonly number[]): Promise<boolean[]> {
    return this.executor.submitMerged({
      key: `ack\u0000${this.name}\u0000${now}`,
      arg: tokens,
      run: async (connection, batch, lists: (readonly number[])[]) => {
        const ops = await this.ops(connection, batch);
        const results = await ops.ack(now, lists.flat());
        return lists.map((list) => results.splice(0, list.length));
      },
    });
  }

  private ops(connection: SqlConnection, batch: BatchContext): Promise<QueueOps> {
    return queueOps(this.access, connection, batch, this.name);
  }

  async nack(now: number, token: number, options?: NackOptions) {
    checkTokens([token]);
    const nack = resolveNackOptions(options);
    return this.run((ops) => ops.nack(now, token, nack), true);
  }

  reject(now: number, token: number, options?: NackOptions) {
    return this.nack(now, token, options);
  }

  async extend(now: number, token: number, visibility: number) {
    const problems = new Problems();
    problems.positiveInteger('token', token);
    problems.positiveInteger('visibility', visibility);
    problems.throwIfAny();
    return this.run((ops) => ops.extend(now, token, visibility));
  }

  async openSession(now: number, options?: SessionOptions) {
    const session = resolveSessionOptions(options);
    return this.run((ops) => ops.openSessionAt(now, session));
  }

  heartbeat(now: number, sessionId: string) {
    return this.run((ops) => ops.heartbeat(now, sessionId));
  }

  closeSession(now: number, sessionId: string) {
    return this.run((ops) => ops.closeSession(now, sessionId), true);
  }

  async ackUpTo(now: number, sessionId: string, token: number) {
    checkTokens([token]);
    return this.run(async (ops) => ops.ackRows(now, await ops.upTo(now, sessionId, token)));
  }

  async nackUpTo(now: number, sessionId: string, token: number, options?: NackOptions) {
    const nack = resolveNackOptions(options);
    checkTokens([token]);
    return this.run(
      async (ops) => ops.settleNacks(await ops.upTo(now, sessionId, token), now, nack),
      true,
    );
  }

  deadLetters() {
    return this.run((ops) => ops.deadLetters());
  }

  async redrive(now: number, ids?: readonly string[]) {
    checkIdList(ids);
    return this.run((ops) => ops.redrive(now, ids), true);
  }

  async purge(now: number, ids?: readonly string[]) {
    checkIdList(ids);
    return this.run((ops) => ops.purge(now, ids));
  }

  stats(now: number) {
    return this.run((ops) => ops.stats(now));
  }

  job(id: string) {
    return this.run((ops) => ops.job(id));
  }

  async nextEventAt() {
    const next = await this.run((ops) => ops.computeNextEventAt());
    return next === Number.POSITIVE_INFINITY ? undefined : next;
  }
}

function problemsError(problems: Problems): ValidationError {
  return new ValidationError(problems.list);
}

/** Checks every entry (all-or-nothing, R5) and turns payloads into JSON text up front. */
function encodePublishes(inputs: readonly PublishInput[], name: string): EncodedPublish[] {
  checkPublishInputs(inputs, name);
  return inputs.map((input, index) => ({
    id: input.id,
    payloadJson: encodePayload(
      input.payload,
      inputs.length === 1 && name === 'job' ? 'job' : `${name}[${index}]`,
    ),
    delay: input.delay ?? 0,
  }));
}
