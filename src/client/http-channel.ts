import { build, ClosedError } from '../core/index.js';
import {
  operationToWire,
  type WireDelivery,
  type WireOperation,
  type WireOutcome,
} from '../wire/index.js';
import type { Channel, ChannelReceive } from './channel.js';
import { errorFromWire } from './errors.js';
import { type HttpTransport, RequestAborted } from './http.js';
import { BATCH_ENVELOPE_BYTES, OperationBatcher } from './operation-batcher.js';
import type { ServerLimits, ServerLimitsReader } from './server-limits.js';

export interface HttpChannelSettings {
  /** The longest wait one receive request carries, at most; the server's maxWaitMs when lower. */
  maxWaitPerRequestMs: number | undefined;
  /** Most entries one batch request carries, at most; the server's maxBatch when lower. */
  maxBatch: number | undefined;
}

/** Operations as `POST /v1/queues/{name}/operations`, receives as long polls. */
export class HttpChannel implements Channel {
  private readonly batcher: OperationBatcher;
  /** The server's limits as lowered here, once known. */
  private loweredLimits: Promise<ServerLimits> | undefined;

  constructor(
    private readonly http: HttpTransport,
    private readonly settings: HttpChannelSettings,
    private readonly limits: ServerLimitsReader,
  ) {
    this.batcher = new OperationBatcher({
      send: async (queue, operations) =>
        (
          await this.http.request<{ results: WireOutcome[] }>(
            'POST',
            `${queuePath(queue)}/operations`,
            {
              body: { operations },
              answer: { results: 'array' },
              // An outcome per operation, as a leaseq server answers (another API's `results`
              // list is not taken for one).
              accepts: (answer) => isOutcomeList(answer.results, operations.length),
            },
          )
        ).results,
      limits: async () => {
        const { maxBatch, maxBodyBytes } = await this.serverLimits();
        return { maxBatch, maxBytes: maxBodyBytes };
      },
      envelopeBytes: BATCH_ENVELOPE_BYTES.http,
    });
  }

  /**
   * The server's limits, lowered by this client's settings: requests are shaped to what the
   * server takes, not refused by it.
   */
  private serverLimits(): Promise<ServerLimits> {
    this.loweredLimits ??= this.limits.read().then(
      (server) => this.lowered(server),
      (error: unknown) => {
        this.loweredLimits = undefined;
        throw error;
      },
    );
    return this.loweredLimits;
  }

  private lowered(server: ServerLimits): ServerLimits {
    const { maxBatch, maxWaitPerRequestMs } = this.settings;
    return {
      ...server,
      maxBatch: Math.min(server.maxBatch, maxBatch ?? Number.POSITIVE_INFINITY),
      maxWaitMs: Math.min(server.maxWaitMs, maxWaitPerRequestMs ?? Number.POSITIVE_INFINITY),
    };
  }

  execute(queue: string, operations: Parameters<Channel['execute']>[1], whole = false) {
    return this.batcher.submit(queue, operations, whole);
  }

  /**
   * A receive that does not wait is a `reserve` operation, coalesced with the other calls of
   * its tick into one batch request (several reserves of it when it asks for more than
   * maxBatch), so concurrent consumers cost one request, not one each. Waits longer than one
   * request may carry (the server's maxWaitMs) are several long polls; a long poll answers with
   * what is ready when it wakes, at most the server's maxBatch.
   */
  async receive(queue: string, request: ChannelReceive): Promise<WireDelivery[]> {
    const { wait, signal, ...asked } = request;
    // An aborted signal waits for nothing: what is ready, as in-process.
    if (wait === 0 || signal?.aborted) {
      return unwrap((await this.execute(queue, [reserveToWire(asked)]))[0]);
    }
    const { maxBatch, maxWaitMs } = await this.serverLimits();
    const reserve = { ...asked, max: Math.min(asked.max ?? 1, maxBatch) };
    const until = Date.now() + wait;
    for (;;) {
      const chunk = Math.min(Math.max(0, until - Date.now()), maxWaitMs);
      const started = Date.now();
      let answer: { deliveries: WireDelivery[] };
      const open = !this.http.closed;
      try {
        answer = await this.http.request('POST', `${queuePath(queue)}/receive`, {
          body: { ...reserve, wait: chunk },
          answer: { deliveries: 'array' },
          waitMs: chunk,
          ...(signal === undefined ? {} : { signal }),
        });
      } catch (error) {
        // Its own signal, or closing the client, ends a waiting receive with an empty answer
        // (RemoteBroker.close); a receive made after the close fails with CLOSED.
        if (error instanceof RequestAborted) return [];
        if (error instanceof ClosedError && open && this.http.closed) return [];
        throw error;
      }
      // An empty answer before the wait ran out means the server stopped waiting (shutdown).
      const endedEarly = Date.now() - started < chunk;
      if (answer.deliveries.length > 0 || Date.now() >= until || endedEarly || signal?.aborted) {
        return answer.deliveries;
      }
    }
  }

  /** See Channel.closing. */
  closing = false;

  async close(): Promise<void> {
    this.closing = true;
  }
}

export function queuePath(queue: string): string {
  return `/v1/queues/${encodeURIComponent(queue)}`;
}

/** A receive's reserve as a wire operation (its session is already the server's handle). */
export function reserveToWire(reserve: Omit<ChannelReceive, 'wait' | 'signal'>): WireOperation {
  return operationToWire(build.reserve(reserve), {
    receipt: () => '',
    sessionHandle: (handle) => handle,
  });
}

/** The deliveries of a reserve's outcome, or its error thrown. */
export function unwrap(outcome: WireOutcome | undefined): WireDelivery[] {
  if (outcome === undefined) throw new Error('the server answered no outcome');
  if (!outcome.ok) throw errorFromWire(outcome.error);
  return outcome.value as WireDelivery[];
}

/** Whether `results` holds `count` outcomes (objects saying whether each operation was `ok`). */
function isOutcomeList(results: unknown, count: number): boolean {
  return (
    Array.isArray(results) &&
    results.length === count &&
    results.every(
      (outcome) =>
        typeof outcome === 'object' &&
        outcome !== null &&
        typeof (outcome as { ok?: unknown }).ok === 'boolean',
    )
  );
}
