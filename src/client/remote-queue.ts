import type { Queue, ReceiveOptions } from '../broker/index.js';
import {
  type DeadLetter,
  type Delivery,
  type InspectView,
  type JobView,
  type LiveDelivery,
  type NackOptions,
  type PublishInput,
  type PublishResult,
  type QueueStats,
  type ResolvedQueueOptions,
  type SessionOptions,
  ValidationError,
} from '../core/index.js';
import { checkTokens, Problems, resolveNackOptions } from '../core/validate.js';
import { boundsFromWire, type WireDelivery } from '../server/wire.js';
import { type HttpTransport, RequestAborted } from './http.js';
import type { ReceiptBook } from './receipt-book.js';

/** A delivery with the receipt that settles it (what `receiveWithReceipts` returns). */
export interface ReceivedDelivery extends Delivery {
  receipt: string;
}

export interface RemoteQueueSettings {
  /** The longest wait one receive request carries; longer waits are several requests. */
  maxWaitPerRequestMs: number;
  /** Most entries one batch request carries; ackMany splits longer lists. */
  maxBatch: number;
}

/**
 * A queue on a leaseq server, implementing `Queue` exactly. Tokens are numbers here as
 * everywhere; this client keeps the receipt of every delivery it received and sends that.
 * A token this client never received (or has already settled) is stale to it: ack and nack
 * answer false and extend null without asking the server.
 */
export class RemoteQueue implements Queue {
  private readonly path: string;

  constructor(
    readonly name: string,
    private readonly http: HttpTransport,
    private readonly book: ReceiptBook,
    private readonly settings: RemoteQueueSettings,
  ) {
    this.path = `/v1/queues/${encodeURIComponent(name)}`;
  }

  async options(): Promise<ResolvedQueueOptions> {
    const view = await this.get<{ options: ResolvedQueueOptions }>('');
    return boundsFromWire(view.options);
  }

  publish(input: PublishInput = {}): Promise<PublishResult> {
    return this.post('/jobs', publishBody(input));
  }

  async publishBatch(inputs: readonly PublishInput[]): Promise<PublishResult[]> {
    if (!Array.isArray(inputs)) throw new ValidationError('jobs must be an array');
    const { results } = await this.post<{ results: PublishResult[] }>('/jobs/batch', {
      jobs: inputs.map(publishBody),
    });
    return results;
  }

  async receive(options: ReceiveOptions = {}): Promise<Delivery[]> {
    const received = await this.receiveWithReceipts(options);
    return received.map(({ receipt: _receipt, ...delivery }) => delivery);
  }

  /**
   * `receive`, with each delivery's receipt: for handing a delivery to another process, which
   * can settle it with `ackReceipt` and friends. Waits longer than one request may carry are
   * several long polls.
   */
  async receiveWithReceipts(options: ReceiveOptions = {}): Promise<ReceivedDelivery[]> {
    const { wait = 0, signal, max, visibility, session } = options;
    const reserve = { max, visibility, session };
    if (!Number.isSafeInteger(wait) || wait < 0) {
      throw new ValidationError(`wait must be an integer ≥ 0 (ms), got ${String(wait)}`);
    }
    const until = Date.now() + wait;
    for (;;) {
      const chunk = Math.min(Math.max(0, until - Date.now()), this.settings.maxWaitPerRequestMs);
      const started = Date.now();
      let answer: { deliveries: WireDelivery[] };
      try {
        answer = await this.post(
          '/receive',
          { ...reserve, wait: chunk },
          { signal, waitMs: chunk },
        );
      } catch (error) {
        if (error instanceof RequestAborted) return [];
        throw error;
      }
      // An empty answer before the wait ran out means the server stopped waiting (shutdown).
      const endedEarly = Date.now() - started < chunk;
      if (answer.deliveries.length > 0 || Date.now() >= until || endedEarly || signal?.aborted) {
        return answer.deliveries.map((wire) => this.remember(wire, reserve.session));
      }
    }
  }

  async ack(token: number): Promise<boolean> {
    checkTokens([token]);
    const receipt = this.book.receipt(token);
    if (receipt === undefined) return false;
    const [acked] = await this.ackReceipts([receipt]);
    this.book.forget(token);
    return acked === true;
  }

  async ackMany(tokens: readonly number[]): Promise<boolean[]> {
    if (!Array.isArray(tokens)) throw new ValidationError('tokens must be an array');
    checkTokens(tokens);
    const results: boolean[] = tokens.map(() => false);
    const known = tokens.flatMap((token, index) => {
      const receipt = this.book.receipt(token);
      return receipt === undefined ? [] : [{ token, index, receipt }];
    });
    for (let start = 0; start < known.length; start += this.settings.maxBatch) {
      const part = known.slice(start, start + this.settings.maxBatch);
      const acked = await this.ackReceipts(part.map((entry) => entry.receipt));
      part.forEach((entry, at) => {
        results[entry.index] = acked[at] === true;
        this.book.forget(entry.token);
      });
    }
    return results;
  }

  async nack(token: number, options?: NackOptions): Promise<boolean> {
    checkTokens([token]);
    resolveNackOptions(options);
    const receipt = this.book.receipt(token);
    if (receipt === undefined) return false;
    const nacked = await this.nackReceipt(receipt, options);
    this.book.forget(token);
    return nacked;
  }

  reject(token: number, options?: NackOptions): Promise<boolean> {
    return this.nack(token, options);
  }

  async extend(token: number, visibility: number): Promise<number | null> {
    const problems = new Problems();
    problems.positiveInteger('token', token);
    problems.positiveInteger('visibility', visibility);
    problems.throwIfAny();
    const receipt = this.book.receipt(token);
    if (receipt === undefined) return null;
    const deadline = await this.extendReceipt(receipt, visibility);
    if (deadline === null) this.book.forget(token);
    return deadline;
  }

  /** The receipt of a delivery this client received and has not settled. */
  receiptOf(token: number): string | undefined {
    return this.book.receipt(token);
  }

  /** Acks deliveries by receipt (from any process); one result per receipt. */
  async ackReceipts(receipts: readonly string[]): Promise<boolean[]> {
    const { results } = await this.post<{ results: { acked: boolean }[] }>('/ack/batch', {
      receipts,
    });
    return results.map((result) => result.acked);
  }

  async nackReceipt(receipt: string, options: NackOptions = {}): Promise<boolean> {
    const { requeue, delay, reason } = options;
    const answer = await this.post<{ nacked: boolean }>('/nack', {
      receipt,
      requeue,
      delay,
      reason,
    });
    return answer.nacked;
  }

  async extendReceipt(receipt: string, visibility: number): Promise<number | null> {
    const answer = await this.post<{ deadline: number | null }>('/extend', { receipt, visibility });
    return answer.deadline;
  }

  async openSession(options: SessionOptions = {}): Promise<string> {
    const { prefetch, timeout, ackTimeout } = options;
    const answer = await this.post<{ session: string }>('/sessions', {
      prefetch,
      timeout,
      ackTimeout,
    });
    return answer.session;
  }

  async heartbeat(sessionId: string): Promise<void> {
    await this.post('/sessions/heartbeat', { session: sessionId });
  }

  async closeSession(sessionId: string): Promise<number> {
    const { released } = await this.post<{ released: number }>('/sessions/close', {
      session: sessionId,
    });
    this.book.forgetSession(sessionId);
    return released;
  }

  async ackUpTo(sessionId: string, token: number): Promise<number> {
    const { acked } = await this.post<{ acked: number }>('/sessions/ack-up-to', {
      session: sessionId,
      token,
    });
    this.book.forgetSession(sessionId, token);
    return acked;
  }

  async nackUpTo(sessionId: string, token: number, options: NackOptions = {}): Promise<number> {
    const { requeue, delay, reason } = options;
    const { nacked } = await this.post<{ nacked: number }>('/sessions/nack-up-to', {
      session: sessionId,
      token,
      requeue,
      delay,
      reason,
    });
    this.book.forgetSession(sessionId, token);
    return nacked;
  }

  async deadLetters(): Promise<DeadLetter[]> {
    return (await this.get<{ deadLetters: DeadLetter[] }>('/dead-letters')).deadLetters;
  }

  async redrive(ids?: readonly string[]): Promise<number> {
    return (await this.post<{ redriven: number }>('/dead-letters/redrive', { ids })).redriven;
  }

  async purge(ids?: readonly string[]): Promise<number> {
    return (await this.post<{ purged: number }>('/dead-letters/purge', { ids })).purged;
  }

  stats(): Promise<QueueStats> {
    return this.get('/stats');
  }

  inspect(): Promise<InspectView> {
    return this.get('/inspect');
  }

  async deliveries(): Promise<LiveDelivery[]> {
    return (await this.get<{ deliveries: LiveDelivery[] }>('/deliveries')).deliveries;
  }

  /**
   * One job, or undefined. The ids `.` and `..` cannot be one URL path segment (URLs resolve
   * them), so they are refused here.
   */
  async job(id: string): Promise<JobView | undefined> {
    if (id === '.' || id === '..') {
      throw new ValidationError('the job ids "." and ".." cannot be looked up over HTTP');
    }
    try {
      return await this.get<JobView>(`/jobs/${encodeURIComponent(id)}`);
    } catch (error) {
      if ((error as { code?: string }).code === 'NOT_FOUND') return undefined;
      throw error;
    }
  }

  private remember(wire: WireDelivery, session: string | undefined): ReceivedDelivery {
    this.book.add(wire.fencingToken, wire.receipt, session);
    return {
      token: wire.fencingToken,
      id: wire.id,
      payload: wire.payload,
      deadline: wire.deadline,
      deliveryCount: wire.deliveryCount,
      redelivered: wire.redelivered,
      receipt: wire.receipt,
    };
  }

  private get<T>(suffix: string): Promise<T> {
    return this.http.request<T>('GET', `${this.path}${suffix}`);
  }

  private post<T>(
    suffix: string,
    body: unknown,
    options: { signal?: AbortSignal | undefined; waitMs?: number } = {},
  ): Promise<T> {
    return this.http.request<T>('POST', `${this.path}${suffix}`, {
      body,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.waitMs === undefined ? {} : { waitMs: options.waitMs }),
    });
  }
}

/** Only the fields a publish has; JSON drops the absent ones. */
function publishBody(input: PublishInput): PublishInput {
  if (typeof input !== 'object' || input === null) {
    throw new ValidationError('job must be an object');
  }
  return { id: input.id, payload: input.payload, delay: input.delay };
}
