import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { MAX_TIMER_MS } from '../broker/clock.js';
import { onAbort } from '../broker/on-abort.js';
import { ClosedError, StorageUnavailableError, UnsupportedError } from '../core/index.js';
import type {
  ClientFrame,
  DeliveriesFrame,
  ServerFrame,
  StreamLimits,
  UnsubscribedFrame,
} from '../wire/index.js';
import {
  CLOSED_IN_FLIGHT,
  ConnectionLostError,
  errorFromResponse,
  isLeaseqErrorBody,
  noSuchRouteError,
  notLeaseqAnswer,
  RemoteError,
  STREAM_CONNECTION_LOST,
} from './errors.js';
import { UnansweredError } from './http.js';
import { type LongTimeout, setLongTimeout } from './long-timeout.js';

export interface StreamLinkOptions {
  apiKey?: string;
  /**
   * How long a frame may wait for its answer, (re)connecting included, and a connection for
   * the server's ready. Any length: one past the longest Node timer is timed in parts.
   */
  timeoutMs: number;
}

/** What a subscription is told: its pushes, its end by the server, and a lost connection. */
export interface PushListener {
  push(frame: DeliveriesFrame | UnsubscribedFrame): void;
  /**
   * The connection ended; `refused` when it was for a server this client cannot use (its
   * waiting receives fail with that, not as a connection lost).
   */
  lost(refused?: Error): void;
  /**
   * Pushes of a subscribe this listener gave up on (it was not answered in time, and is ended
   * once it is): not its to hand out, they go back unworked.
   */
  giveBackPushed(frame: DeliveriesFrame): void;
}

type RequestFrame = ClientFrame extends infer F
  ? F extends ClientFrame
    ? Omit<F, 'id'>
    : never
  : never;

interface Pending {
  resolve(frame: ServerFrame): void;
  reject(error: unknown): void;
  timer: LongTimeout;
}

const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 5000;
/** A connection that lived this long before dropping starts the backoff afresh. */
const HEALTHY_MS = 5000;

/** WebSocket.OPEN and WebSocket.CLOSED, without loading ws to read them. */
const OPEN = 1;
const CLOSED = 3;

/**
 * One WebSocket to a leaseq server's stream, opened at the first frame and again (after a
 * backoff that grows with consecutive failures) at the first frame after it dropped. Frames
 * are matched to their answers by id; a drop fails every frame in flight with a
 * ConnectionLostError (it may or may not have taken effect) and tells the subscriptions.
 */
export class StreamLink {
  private socket: WebSocket | undefined;
  private connecting: Promise<WebSocket> | undefined;
  /** The socket of the connection being opened, until the server's ready frame. */
  private handshaking: WebSocket | undefined;
  /** The calls waiting for a connection (openBy): close() fails them at once. */
  private readonly waiting = new Set<(error: unknown) => void>();
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Map<number, PushListener>();
  /**
   * Subscribes that were not answered in time, by id: left alone, one the server opened after
   * all would take jobs for nobody for as long as the connection lives. Its late answer ends it.
   */
  private readonly abandoned = new Map<number, PushListener>();
  private failures = 0;
  private retryAt = 0;
  /** Connections made so far: the current one's number, while it is open. */
  private connections = 0;
  private closed = false;
  /**
   * Set once the server showed it is older than this client can use (see olderServer): every
   * later call fails with it at once, and no connection is opened again, since each would be
   * pushed jobs only to leave them leased.
   */
  private refused: UnsupportedError | undefined;
  /** Ends the wait of a reconnect's backoff at once (close). */
  private endBackoff: (() => void) | undefined;
  /**
   * The limits of the server's ready frame, unknown until the first connection: nothing that
   * depends on them is sent before (knownLimits).
   */
  private limits: StreamLimits | undefined;
  /** Told of each new connection, before the frames waiting for it are sent. */
  private opened: ((limits: StreamLimits) => void) | undefined;

  constructor(
    readonly url: string,
    private readonly options: StreamLinkOptions,
  ) {}

  /** Sends a frame and resolves with its answer; `listener` hears the pushes of a subscribe. */
  async request(frame: RequestFrame, listener?: PushListener): Promise<ServerFrame> {
    // The time a frame has covers (re)connecting too: a call waits at most `timeoutMs` in all.
    const deadline = performance.now() + this.options.timeoutMs;
    const socket =
      this.socket !== undefined && !this.closed ? this.socket : await this.openBy(deadline);
    if (this.closed) throw new ClosedError('the client is closed');
    const id = this.nextId++;
    const text = JSON.stringify({ ...frame, id });
    // The server closes the connection on a larger message, failing every call on it. A UTF-16
    // unit is at most 3 bytes of UTF-8: a frame within a third of the bound is not measured.
    const maxFrameBytes = this.limits?.maxFrameBytes ?? Number.POSITIVE_INFINITY;
    if (text.length * 3 > maxFrameBytes) {
      const bytes = Buffer.byteLength(text, 'utf8');
      if (bytes > maxFrameBytes) {
        throw new RemoteError(
          'PAYLOAD_TOO_LARGE',
          413,
          `the ${frame.type} frame is ${bytes} bytes; the server takes at most ${maxFrameBytes}`,
        );
      }
    }
    return new Promise((resolve, reject) => {
      const timer = setLongTimeout(
        () => {
          this.pending.delete(id);
          const listening = this.listeners.get(id);
          if (listening !== undefined) {
            this.listeners.delete(id);
            this.abandoned.set(id, listening);
          }
          // Sent already (below): the server may have run it.
          reject(this.unanswered());
        },
        Math.max(0, deadline - performance.now()),
      );
      this.pending.set(id, { resolve, reject, timer });
      if (listener !== undefined) this.listeners.set(id, listener);
      socket.send(text);
    });
  }

  /**
   * The server's limits, as its ready frame gave them; connects first when not connected, or
   * fails with STORAGE_UNAVAILABLE (nothing sent) at `deadline`.
   */
  async knownLimits(deadline = performance.now() + this.options.timeoutMs): Promise<StreamLimits> {
    if (this.socket === undefined || this.closed || this.limits === undefined) {
      await this.openBy(deadline);
    }
    return this.limits as StreamLimits;
  }

  /**
   * Fails the calls waiting for a connection with CLOSED (never sent), as `close` does, while the
   * connection being opened goes on: a client's close opens one for frames of its own.
   */
  refuseWaiting(): void {
    const error = new ClosedError('the client is closed');
    for (const fail of [...this.waiting]) fail(error);
  }

  /**
   * Connects now if not connected, a backoff under way cut short (a client's close, which waits
   * for nothing longer than its own bound), or fails with STORAGE_UNAVAILABLE at `deadline`.
   */
  async connectNow(deadline: number): Promise<void> {
    this.retryAt = 0;
    this.endBackoff?.();
    await this.knownLimits(deadline);
  }

  /**
   * `answer`, or the error of a frame left unanswered once `deadline` passes: a call that waited
   * for a connection has what is left of its timeoutMs for its answer, not a timeoutMs afresh.
   */
  answeredBy<T>(answer: Promise<T>, deadline: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setLongTimeout(
        () => reject(this.unanswered()),
        Math.max(0, deadline - performance.now()),
      );
      answer.then(
        (value) => {
          timer.clear();
          resolve(value);
        },
        (error: unknown) => {
          timer.clear();
          reject(error);
        },
      );
    });
  }

  /** The error of a frame sent and not answered within timeoutMs: it may have been run. */
  private unanswered(): UnansweredError {
    return new UnansweredError(
      `${this.url} did not answer within ${this.options.timeoutMs} ms: the call may or may not have taken effect`,
    );
  }

  /**
   * Calls `listener` as each connection opens, before the calls that wait for it send their
   * frames: a frame it sends is the connection's first.
   */
  onOpen(listener: (limits: StreamLimits) => void): void {
    this.opened = listener;
  }

  /** Stops listening to a subscription's pushes. */
  forget(subscription: number): void {
    this.listeners.delete(subscription);
  }

  get connected(): boolean {
    return this.socket?.readyState === OPEN;
  }

  /**
   * The open connection's number (each connection has its own), or undefined while there is
   * none: what the server tied to a connection (its sessions) is gone once this changes.
   */
  get connection(): number | undefined {
    return this.socket === undefined || this.closed ? undefined : this.connections;
  }

  /**
   * Closes the connection, or ends the one being opened; frames in flight (which may or may not
   * have taken effect: `mayHaveTakenEffect`), those waiting for a connection and later ones fail
   * with CLOSED. Resolves once the socket is gone: the server's answer to the close is waited
   * for `withinMs` at most (none once `signal` aborts), then the socket is ended without it.
   */
  close(withinMs = 0, signal?: AbortSignal): Promise<void> {
    this.closed = true;
    const socket = this.socket;
    const error = new ClosedError('the client is closed');
    // A frame in flight was sent: the server may have run it. One waiting for a connection was not.
    this.lose(new ClosedError(CLOSED_IN_FLIGHT, { mayHaveTakenEffect: true }));
    for (const fail of [...this.waiting]) fail(error);
    // Left to its handshake, the socket would hold the process (and the server's count) open.
    this.handshaking?.terminate();
    // So would the backoff's timer, for up to its 5 s.
    this.endBackoff?.();
    if (socket === undefined || socket.readyState === CLOSED) return Promise.resolve();
    // A server (or a link) that never answers the close would leave the socket open, and ws's
    // wait for that answer (30 s) would hold the process as long.
    return new Promise<void>((resolve) => {
      const end = () => socket.terminate();
      const timer = setLongTimeout(end, signal?.aborted ? 0 : withinMs);
      const unwatch = signal === undefined ? undefined : onAbort(signal, end);
      socket.once('close', () => {
        timer.clear();
        unwatch?.();
        resolve();
      });
      socket.close(1000);
    });
  }

  /**
   * The connection, opened if need be (after the backoff), or STORAGE_UNAVAILABLE at
   * `deadline`: the frame was then never sent.
   */
  private openBy(deadline: number): Promise<WebSocket> {
    const opening = this.open();
    return new Promise((resolve, reject) => {
      const fail = (error: unknown) => {
        timer.clear();
        this.waiting.delete(fail);
        reject(error);
      };
      const timer = setLongTimeout(
        () =>
          fail(
            new StorageUnavailableError(
              `cannot reach ${this.url} within ${this.options.timeoutMs} ms (nothing was sent)`,
            ),
          ),
        Math.max(0, deadline - performance.now()),
      );
      this.waiting.add(fail);
      opening.then((socket) => {
        timer.clear();
        this.waiting.delete(fail);
        resolve(socket);
      }, fail);
    });
  }

  private open(): Promise<WebSocket> {
    if (this.closed) return Promise.reject(new ClosedError('the client is closed'));
    if (this.refused !== undefined) return Promise.reject(this.refused);
    if (this.socket !== undefined) return Promise.resolve(this.socket);
    this.connecting ??= this.connect().then(
      (socket) => {
        this.connecting = undefined;
        return socket;
      },
      (error: unknown) => {
        this.connecting = undefined;
        this.failed();
        throw error;
      },
    );
    return this.connecting;
  }

  private async connect(): Promise<WebSocket> {
    const backoff = this.retryAt - performance.now();
    if (backoff > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, backoff);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.endBackoff = done;
      });
      this.endBackoff = undefined;
    }
    if (this.closed) throw new ClosedError('the client is closed');
    // Loaded at the first connection: a process that never talks to a server never loads ws.
    const { WebSocket } = await import('ws');
    if (this.closed) throw new ClosedError('the client is closed');
    const socket = new WebSocket(this.url, {
      headers:
        this.options.apiKey === undefined ? {} : { authorization: `Bearer ${this.options.apiKey}` },
      perMessageDeflate: false,
      // Any size, as an HTTP answer is read: ws's default (100 MiB) closed the connection on a
      // larger answer, such as a reserve with ack 'auto' of large payloads, whose jobs were then
      // gone from the queue and lost with it, unanswered.
      maxPayload: 0,
      // A Node timer (the request's): a longer one would end the handshake at once. The wait
      // for the ready frame (handshake) times the whole of timeoutMs.
      handshakeTimeout: Math.min(this.options.timeoutMs, MAX_TIMER_MS),
    });
    // Its TCP socket, whose bytes are heard as they come (see attach).
    let bytes: Socket | undefined;
    socket.once('upgrade', (response) => {
      bytes = response.socket;
    });
    this.handshaking = socket;
    try {
      await this.handshake(socket);
    } finally {
      this.handshaking = undefined;
    }
    if (this.closed) {
      // Closed as the ready frame came in: this connection is not used.
      socket.on('error', () => {});
      socket.terminate();
      throw new ClosedError('the client is closed');
    }
    this.attach(socket, (this.limits as StreamLimits).heartbeatMs, bytes);
    return socket;
  }

  /** Resolves at the server's ready frame (its limits kept), or fails and ends the socket. */
  private handshake(socket: WebSocket): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // ws's handshakeTimeout ends at the upgrade's answer: a link that dies after it, before
      // the ready frame, would hold this connection, and every call waiting for it, for good.
      const timer = setLongTimeout(
        () =>
          fail(
            new StorageUnavailableError(
              `${this.url} did not start the stream within ${this.options.timeoutMs} ms`,
            ),
          ),
        this.options.timeoutMs,
      );
      const fail = (error: unknown) => {
        timer.clear();
        socket.removeAllListeners();
        socket.on('error', () => {});
        socket.terminate();
        reject(this.closed ? new ClosedError('the client is closed') : error);
      };
      socket.once('unexpected-response', (_request, response) => {
        const chunks: Buffer[] = [];
        const status = response.statusCode ?? 0;
        // Named by the server's URL, as the user gave it, when the stream's is built from it.
        const base = /^ws(s?):\/\/(.+)\/v1\/stream$/i.exec(this.url);
        const server = base === null ? this.url : `http${base[1]}://${base[2]}`;
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        // An answer cut short by the connection's end (a proxy's error page, say) has no 'end':
        // it fails the call now, not once timeoutMs has passed.
        response.on('close', () => {
          if (response.complete) return;
          fail(
            new StorageUnavailableError(
              `${server} answered the stream's WebSocket upgrade (GET /v1/stream) with ${status}, and the connection broke before the answer ended: nothing was sent`,
            ),
          );
        });
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {}
          if (isLeaseqErrorBody(body)) {
            fail(
              noSuchRouteError(server, 'GET /v1/stream', status, body) ??
                errorFromResponse(status, body),
            );
            return;
          }
          // Not a leaseq server's refusal (an HTML page, a proxy's error): said as such.
          const { location } = response.headers;
          // A relative redirect is read as the upgrade request's, sent over HTTP(S).
          const requested = base === null ? this.url : `${server}/v1/stream`;
          fail(
            notLeaseqAnswer(
              server,
              base === null
                ? "the stream's WebSocket upgrade"
                : "GET /v1/stream (the stream's WebSocket upgrade)",
              {
                status,
                text,
                contentType: response.headers['content-type'],
                location:
                  location === undefined || !URL.canParse(location, requested)
                    ? undefined
                    : new URL(location, requested).href,
                otherShape: body !== undefined,
              },
            ),
          );
        });
      });
      socket.once('error', (error) =>
        fail(new StorageUnavailableError(`cannot reach ${this.url}: ${error.message}`)),
      );
      // Closed before its ready frame: no call was sent on it yet.
      socket.once('close', () =>
        fail(
          new StorageUnavailableError(
            `${this.url} closed the stream before it started (nothing was sent)`,
          ),
        ),
      );
      socket.once('message', (data) => {
        const frame = parseFrame(data);
        if (frame?.type !== 'ready') {
          fail(new StorageUnavailableError(`${this.url} did not start the stream`));
          return;
        }
        timer.clear();
        this.limits = frame.limits;
        socket.removeAllListeners();
        resolve();
      });
    });
  }

  private attach(socket: WebSocket, heartbeatMs: number, bytes: Socket | undefined): void {
    this.socket = socket;
    this.connections += 1;
    const openedAt = performance.now();
    let alive = true;
    const heartbeat = setInterval(
      () => {
        if (!alive) {
          socket.terminate();
          return;
        }
        alive = false;
        socket.ping();
      },
      Math.min(heartbeatMs, MAX_TIMER_MS),
    ); // longer: Node would fire it every millisecond
    heartbeat.unref();
    socket.on('pong', () => {
      alive = true;
    });
    // The bytes of a frame on its way are heard too: a large one over a slow link takes longer
    // than an interval to come whole, and the server's pong waits behind it.
    bytes?.on('data', () => {
      alive = true;
    });
    socket.on('message', (data) => {
      alive = true;
      const frame = parseFrame(data);
      // Not a frame of the protocol (not JSON, or not the shape its type says): the connection
      // is not to be trusted with more calls.
      if (frame === undefined) {
        socket.terminate();
        return;
      }
      if (frame.type === 'deliveries' && typeof frame.now !== 'number') {
        this.refused = olderServer(this.url);
        socket.terminate();
        return;
      }
      try {
        this.dispatch(frame);
      } catch {
        socket.terminate();
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(heartbeat);
      if (this.socket !== socket) return;
      if (performance.now() - openedAt >= HEALTHY_MS) this.failures = 0;
      this.failed();
      // A frame in flight may have run all the same: it fails as on any drop, saying why.
      this.lose(
        new ConnectionLostError(
          this.refused === undefined
            ? STREAM_CONNECTION_LOST
            : `this client ended the stream connection: ${this.refused.message}`,
        ),
      );
    });
    this.opened?.(this.limits as StreamLimits);
  }

  private dispatch(frame: ServerFrame): void {
    if (frame.type === 'deliveries') {
      const listener = this.listeners.get(frame.subscription);
      if (listener !== undefined) listener.push(frame);
      else this.abandoned.get(frame.subscription)?.giveBackPushed(frame);
      return;
    }
    if (frame.type === 'unsubscribed') {
      this.listeners.get(frame.subscription)?.push(frame);
      this.listeners.delete(frame.subscription);
      this.abandoned.delete(frame.subscription);
      if (frame.id === undefined) return;
    }
    if (frame.type === 'ready' || frame.id === undefined) return;
    const pending = this.pending.get(frame.id);
    if (pending === undefined) {
      if (this.abandoned.has(frame.id)) this.endAbandoned(frame.id, frame);
      return;
    }
    this.pending.delete(frame.id);
    pending.timer.clear();
    if (frame.type === 'error') this.listeners.delete(frame.id);
    pending.resolve(frame);
  }

  /** The late answer of a subscribe given up on: opened after all, it is ended. */
  private endAbandoned(id: number, answer: ServerFrame): void {
    if (answer.type !== 'subscribed') {
      this.abandoned.delete(id);
      return;
    }
    // Kept until the server says it ended (`unsubscribed`, taken off in dispatch) or the
    // connection goes, so that what it pushes meanwhile goes back: an unsubscribe unanswered in
    // time may still be run.
    void this.request({ type: 'unsubscribe', subscription: answer.subscription }).then(
      (ended) => {
        if (ended.type === 'error') this.abandoned.delete(id);
      },
      () => {},
    );
  }

  private failed(): void {
    this.failures += 1;
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(this.failures - 1, 10));
    this.retryAt = performance.now() + delay * (0.5 + Math.random() / 2);
  }

  /** The connection is gone: frames in flight fail, subscriptions are told. */
  private lose(error: unknown): void {
    this.socket = undefined;
    const pending = [...this.pending.values()];
    this.pending.clear();
    const listeners = [...this.listeners.values()];
    this.listeners.clear();
    // The server ended them with the connection; what they were pushed stays leased, as all.
    this.abandoned.clear();
    for (const entry of pending) {
      entry.timer.clear();
      entry.reject(error);
    }
    for (const listener of listeners) listener.lost(this.refused);
  }
}

/**
 * A server whose stream pushes deliveries without `now`, its time as it pushed them (servers
 * before it was sent): this client tells by it whether a held delivery's lease is still on, and
 * without it would hand out leases that ran out, or drop live ones. Refused, saying what to do.
 */
function olderServer(url: string): UnsupportedError {
  return new UnsupportedError(
    `the server at ${url} is older than this client: its stream pushes deliveries without the server's time (now), which this client needs. Upgrade the server, or open the client with transport 'http' (--transport http) until then; the jobs pushed on the refused connection are delivered again once their leases end`,
  );
}

/**
 * A server frame, or undefined for text that is not one: not JSON, or without the fields its
 * type is read by (a server of another version, or a broken one).
 */
function parseFrame(data: unknown): ServerFrame | undefined {
  let frame: unknown;
  try {
    frame = JSON.parse(String(data));
  } catch {
    return undefined;
  }
  if (typeof frame !== 'object' || frame === null) return undefined;
  const fields = frame as Record<string, unknown>;
  const { error } = fields;
  const hasError = typeof error === 'object' && error !== null && 'code' in error;
  switch (fields.type) {
    case 'ready': {
      // The limits are what every later frame is sized and timed by: a ready frame without
      // them (a server of another protocol) starts nothing.
      const { limits } = fields;
      const heartbeatMs =
        typeof limits === 'object' && limits !== null
          ? (limits as Record<string, unknown>).heartbeatMs
          : undefined;
      return typeof heartbeatMs === 'number' && heartbeatMs >= 1
        ? (frame as ServerFrame)
        : undefined;
    }
    case 'results':
      return Array.isArray(fields.results) ? (frame as ServerFrame) : undefined;
    case 'subscribed':
      return typeof fields.subscription === 'number' ? (frame as ServerFrame) : undefined;
    case 'deliveries':
      return typeof fields.subscription === 'number' && Array.isArray(fields.deliveries)
        ? (frame as ServerFrame)
        : undefined;
    case 'unsubscribed':
      return typeof fields.subscription === 'number' && (error === undefined || hasError)
        ? (frame as ServerFrame)
        : undefined;
    case 'error':
      return hasError ? (frame as ServerFrame) : undefined;
    default:
      return undefined;
  }
}
