import type { FastifyInstance } from 'fastify';
import type { Broker, Clock, EngineBroker } from '../../src/broker/index.js';
import type { RemoteBroker, RemoteOptions, RemoteQueue } from '../../src/client/index.js';
import { RemoteBroker as RemoteBrokerClass } from '../../src/client/index.js';
import {
  type DeadLetter,
  type DeadLetterPage,
  type DeadLetterPageOptions,
  type DeliveryPage,
  type DeliveryPageOptions,
  type InspectOptions,
  type InspectView,
  type JobView,
  type LiveDelivery,
  type Operation,
  type Outcome,
  type QueueOptions,
  type ResolvedQueueOptions,
  UnsupportedError,
} from '../../src/core/index.js';
import type {
  Engine,
  EngineCapabilities,
  QueueHandle,
  ScheduleRecord,
} from '../../src/engine/index.js';
import { OperationHandle } from '../../src/engine/operation-handle.js';
import type { StoredSecret } from '../../src/engine/secrets.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';

/**
 * The server's clock, told by the test what `now` each call happens at. It may be told a time
 * behind an earlier one, so a `now` behind a queue's clock reaches the engine and is refused
 * there (R2), as in-process. The test is the only source of time.
 */
export class DirectedClock implements Clock {
  private time = 0;

  now(): number {
    return this.time;
  }

  direct(time: number): void {
    this.time = time;
  }

  /** Time moves only by `direct`: a sleeper (a waiting receive) ends only when aborted. */
  sleep(_ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      signal?.addEventListener('abort', () => resolve(), { once: true });
    });
  }
}

/**
 * How the client reaches the server: plain HTTP through Fastify's inject (in process) or a
 * loopback socket, or the stream (a WebSocket on a loopback socket).
 */
export type RemoteTransport = 'inject' | 'socket' | 'stream';

/** A leaseq server in process over a fresh memory engine, on a clock the test directs. */
export interface ConformanceServer {
  readonly clock: DirectedClock;
  readonly broker: Broker;
  readonly app: FastifyInstance;
  /** `http://…` of the server (a dummy host for inject). */
  readonly baseUrl: string;
  /** How a client reaches it: inject's fetch, the socket by plain HTTP, or the stream. */
  readonly clientOptions: RemoteOptions;
  close(): Promise<void>;
}

export async function startConformanceServer(
  transport: RemoteTransport,
): Promise<ConformanceServer> {
  const clock = new DirectedClock();
  const broker = await open('memory:', { clock });
  const app = await createApp({ broker, receiptSecret: 'conformance-secret-of-32-characters!' });
  let baseUrl = 'http://conformance.invalid';
  let clientOptions: RemoteOptions = { fetch: injectFetch(app) };
  if (transport !== 'inject') {
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    clientOptions = transport === 'stream' ? { transport: 'stream' } : { transport: 'http' };
  } else {
    await app.ready();
  }
  return {
    clock,
    broker,
    app,
    baseUrl,
    clientOptions,
    close: () => app.close().finally(() => broker.close()),
  };
}

/**
 * A fetch answered by `app.inject`: the whole HTTP layer runs, without a socket. An abort
 * (the client closing, a receive given up) rejects at once, as fetch does; the request itself
 * runs on in the server until it answers, as over a socket whose client went away.
 */
export function injectFetch(app: FastifyInstance): typeof fetch {
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(String(input));
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const answer = app.inject({
      method: (init.method ?? 'GET') as 'GET',
      url: url.pathname + url.search,
      headers,
      ...(init.body === undefined || init.body === null ? {} : { payload: String(init.body) }),
    });
    const response = await abortable(answer, init.signal ?? undefined);
    return new Response(response.body === '' ? null : response.body, {
      status: response.statusCode,
      headers: Object.entries(response.headers).flatMap(([name, value]) =>
        value === undefined ? [] : [[name, String(value)] as [string, string]],
      ),
    });
  }) as typeof fetch;
}

function abortable<T>(pending: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return pending;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new DOMException('the request was aborted', 'AbortError'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    pending.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * The Engine interface over the HTTP client: every call of a test reaches the server through
 * the remote client (receipts, the batch route, the server's checks), at the `now` the test
 * gives. Calls run one at a time, so each happens at its own `now`.
 */
export class RemoteEngine implements Engine {
  /** The same for every server of the pool: memory storage behind the remote client. */
  static readonly CAPABILITIES: EngineCapabilities = {
    durable: false,
    shared: true,
    transactions: false,
    crossProcessWakeups: false,
  };
  readonly target: string;
  readonly capabilities: EngineCapabilities = { ...RemoteEngine.CAPABILITIES };
  private readonly client: RemoteBroker;
  private turn: Promise<unknown> = Promise.resolve();

  /**
   * Takes the server over: closing the engine closes it, or hands it to `release` for the next
   * engine (a server in a pool: the tests keep apart by unique queue names, as on PostgreSQL).
   */
  constructor(
    private readonly server: ConformanceServer,
    private readonly release?: (server: ConformanceServer) => void,
  ) {
    this.target = `${server.baseUrl} (memory)`;
    this.client = new RemoteBrokerClass(server.baseUrl, server.clientOptions);
  }

  /** Runs `call` at `now` once every earlier call has finished. */
  at<T>(now: number, call: () => Promise<T>): Promise<T> {
    const run = this.turn.then(() => {
      this.server.clock.direct(now);
      return call();
    });
    this.turn = run.catch(() => {});
    return run;
  }

  /** Runs a read (takes no time) in turn with the other calls. */
  read<T>(call: () => Promise<T>): Promise<T> {
    const run = this.turn.then(call);
    this.turn = run.catch(() => {});
    return run;
  }

  async queue(name: string, options?: QueueOptions): Promise<QueueHandle> {
    const queue = await this.read(() => this.client.queue(name, options));
    return new RemoteHandle(this, queue);
  }

  async ensureQueue(
    name: string,
    options?: QueueOptions,
  ): Promise<{ handle: QueueHandle; created: boolean }> {
    const { created } = await this.read(() => this.client.createQueue(name, options));
    return { handle: this.handle(name), created };
  }

  handle(name: string): QueueHandle {
    return new RemoteHandle(this, this.client.handle(name));
  }

  updateQueue(name: string, options: QueueOptions): Promise<ResolvedQueueOptions> {
    return this.read(() => this.client.updateQueue(name, options));
  }

  listQueues() {
    return this.read(() => this.client.listQueues());
  }

  async checkStorage(): Promise<void> {
    await this.read(() => this.client.listQueues());
  }

  deleteQueue(name: string): Promise<boolean> {
    return this.read(() => this.client.deleteQueue(name));
  }

  onWake(): () => void {
    return () => {};
  }

  /**
   * Schedules (R25) are the server's storage, not an API of records: the HTTP routes of
   * schedules are tested through the client and the CLI; here they reach the server's engine.
   */
  private get schedules(): Engine {
    return (this.server.broker as EngineBroker).engine;
  }

  putSchedule(schedule: ScheduleRecord): Promise<void> {
    return this.read(() => this.schedules.putSchedule(schedule));
  }

  listSchedules(queue?: string): Promise<ScheduleRecord[]> {
    return this.read(() => this.schedules.listSchedules(queue));
  }

  removeSchedule(queue: string, name: string): Promise<boolean> {
    return this.read(() => this.schedules.removeSchedule(queue, name));
  }

  advanceSchedule(read: ScheduleRecord, to: number | null) {
    return this.read(() => this.schedules.advanceSchedule(read, to));
  }

  readSecret(): Promise<StoredSecret> {
    return Promise.reject(new UnsupportedError('secrets are not read over HTTP'));
  }

  rotateSecret(): Promise<StoredSecret> {
    return Promise.reject(new UnsupportedError('secrets are not rotated over HTTP'));
  }

  async close(): Promise<void> {
    await this.turn;
    await this.client.close();
    if (this.release === undefined) await this.server.close();
    else this.release(this.server);
  }
}

class RemoteHandle extends OperationHandle {
  readonly name: string;

  constructor(
    private readonly engine: RemoteEngine,
    private readonly queue: RemoteQueue,
  ) {
    super();
    this.name = queue.name;
  }

  execute(now: number, operations: readonly Operation[]): Promise<Outcome[]> {
    return this.engine.at(now, () => this.queue.execute(operations));
  }

  options(): Promise<ResolvedQueueOptions> {
    return this.engine.read(() => this.queue.options());
  }

  async queueTime(): Promise<number> {
    return (await this.inspect()).queueTime;
  }

  inspect(options?: InspectOptions): Promise<InspectView> {
    return this.engine.read(() => this.queue.inspect(options));
  }

  deliveries(): Promise<LiveDelivery[]> {
    return this.engine.read(() => this.queue.deliveries());
  }

  deliveryPage(options?: DeliveryPageOptions): Promise<DeliveryPage> {
    return this.engine.read(() => this.queue.deliveryPage(options));
  }

  deadLetterPage(options?: DeadLetterPageOptions): Promise<DeadLetterPage> {
    return this.engine.read(() => this.queue.deadLetterPage(options));
  }

  deadLetters(): Promise<DeadLetter[]> {
    return this.engine.read(() => this.queue.deadLetters());
  }

  job(id: string): Promise<JobView | undefined> {
    return this.engine.read(() => this.queue.job(id));
  }

  nextEventAt(): Promise<number | undefined> {
    return Promise.reject(new UnsupportedError('nextEventAt is not served over HTTP'));
  }
}
