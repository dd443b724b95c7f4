import { IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { WebSocketServer } from 'ws';
import { UnsupportedError } from '../../core/index.js';
import { browserRefusal } from '../browser-guard.js';
import { mapError } from '../errors.js';
import type { Services } from '../route.js';
import { StreamConnection } from './stream-connection.js';

/** Where clients open the stream: `ws://host:port/v1/stream`. */
export const STREAM_PATH = '/v1/stream';

/** Node's own reading of a request: it asks for an upgrade (or is a CONNECT). */
const UPGRADE_ASKED = Symbol('upgradeAsked');

/** The one upgrade this server makes, as `ws` takes it: `Upgrade: websocket`. */
function asksWebSocket(request: IncomingMessage): boolean {
  return request.headers.upgrade?.toLowerCase() === 'websocket';
}

/**
 * The requests of the app's HTTP server. Node hands the socket of any request that asks for an
 * upgrade to the server's 'upgrade' listener, which the stream needs; here only a WebSocket
 * upgrade (or a CONNECT) counts as one. Any other, such as the `Upgrade: h2c` that
 * `curl --http2` sends, is served as the plain HTTP/1.1 request it also is (RFC 9110 §7.8: a
 * server may ignore an Upgrade it does not support). Node asks `upgrade` only once the request
 * line and headers are read.
 */
export class HttpRequest extends IncomingMessage {}
Object.defineProperty(HttpRequest.prototype, 'upgrade', {
  get(this: HttpRequest & { [UPGRADE_ASKED]?: boolean | null }): boolean {
    return this[UPGRADE_ASKED] === true && (this.method === 'CONNECT' || asksWebSocket(this));
  },
  set(this: { [UPGRADE_ASKED]?: boolean | null }, value: boolean | null) {
    this[UPGRADE_ASKED] = value;
  },
  configurable: true,
});

/** Cuts the stream connections of an app still answering frames (see `cutStreams`). */
const cutters = new WeakMap<FastifyInstance, () => void>();

/**
 * Ends at once the stream connections of `app` that are still answering frames in flight at
 * shutdown: what the server does when its shutdown timeout passes, as it cuts the HTTP
 * connections still in flight (`closeAllConnections` does not reach upgraded sockets).
 */
export function cutStreams(app: FastifyInstance): void {
  cutters.get(app)?.();
}

/**
 * Serves the stream (docs/stream.md) on the app's HTTP server: a WebSocket upgrade of
 * `GET /v1/stream`, authenticated with the same API keys as every route. Closing the app shuts
 * every stream connection down as HTTP requests in flight are: frames that come after are
 * answered `CLOSED`, subscriptions stop pushing, the frames in flight are answered, and then the
 * connection is closed (1001, going away); `cutStreams` ends those still answering.
 */
export function registerStream(
  app: FastifyInstance,
  services: Services,
  logger: FastifyBaseLogger,
): void {
  const server = new WebSocketServer({
    noServer: true,
    maxPayload: services.limits.maxBodyBytes,
    perMessageDeflate: false,
  });
  const connections = new Set<StreamConnection>();
  const stopWatchingDeletes = services.queues.onDeleted((name) => {
    for (const connection of connections) connection.queueDeleted(name);
  });
  const { now } = services;
  let counter = 0;
  /** Shutdown began: the connections' ends, which closing the app waits for. */
  let shuttingDown: Promise<unknown> | undefined;
  const refuse: typeof refuseUpgrade = (socket, status, error, headers) => {
    services.metrics.stream.upgradeRefused(error.code);
    refuseUpgrade(socket, status, error, headers);
  };
  // A handshake ws cannot take (a missing or bad Sec-WebSocket-Key or -Version): refused with the
  // usual error body, as every other upgrade, rather than ws's own answer in text.
  server.on('wsClientError', (error, socket, request) => {
    // A version it does not speak is answered with those it does (RFC 6455 §4.4), as ws does.
    const version = Number(request.headers['sec-websocket-version']);
    refuse(
      socket,
      400,
      {
        code: 'INVALID_ARGUMENT',
        message: `not a WebSocket handshake this server takes (version 13 or 8): ${error.message}`,
      },
      version === 13 || version === 8 ? {} : { 'sec-websocket-version': '13, 8' },
    );
  });
  // Node's parser drops the bytes that came after a request it took for an upgrade, which
  // HttpRequest then serves as plain HTTP (a pipelined request would be lost): its answer closes
  // the connection, so that the client sends any other request again.
  app.server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    if ((request as { [UPGRADE_ASKED]?: boolean | null })[UPGRADE_ASKED] === true) {
      response.shouldKeepAlive = false;
    }
  });
  app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (request.url ?? '').split('?')[0];
    if (!asksWebSocket(request)) {
      // Not reached while the server's requests are HttpRequest: refused plainly, not as a route.
      refuse(socket, 400, {
        code: 'INVALID_ARGUMENT',
        message: `this server does not upgrade to ${JSON.stringify((request.headers.upgrade ?? '').slice(0, 64))}; send the request without the Upgrade header (curl: --http1.1)`,
      });
      return;
    }
    // Another method is no route, as over plain HTTP (ws would answer 405 in text).
    if (path !== STREAM_PATH || request.method !== 'GET') {
      refuse(socket, 404, { code: 'NOT_FOUND', message: 'no such route' });
      return;
    }
    let principal: ReturnType<Services['access']['authenticate']>;
    try {
      if (services.shutdown.aborted || shuttingDown !== undefined) {
        refuse(socket, 503, { code: 'CLOSED', message: 'the server is shutting down' });
        return;
      }
      const refusal = browserRefusal(
        request.method ?? 'GET',
        request.headers,
        services.access.enabled,
      );
      if (refusal !== undefined) {
        refuse(socket, 403, { code: 'FORBIDDEN', message: refusal });
        return;
      }
      principal = services.access.authenticate(request.headers.authorization);
    } catch (error) {
      const mapped = mapError(error);
      refuse(socket, mapped.status, mapped.body.error);
      return;
    }
    server.handleUpgrade(request, socket, head, (webSocket) => {
      counter += 1;
      const log = logger.child({ stream: counter, key: principal.name });
      log.debug('stream connected');
      const connection = new StreamConnection(webSocket, {
        services,
        principal,
        log,
        now,
        onEnded: () => {
          connections.delete(connection);
          log.debug('stream disconnected');
        },
        sessionClosed: (queue, session) => {
          for (const each of connections) each.sessionClosed(queue, session);
        },
      });
      // The bytes of a frame on its way are heard too (see StreamConnection.heard).
      socket.on('data', () => connection.heard());
      connections.add(connection);
      services.metrics.stream.connectionOpened();
      // Upgraded as shutdown began: it owes nothing yet, and ends like the others.
      if (shuttingDown !== undefined) void connection.shutDown();
    });
  });
  // The stream's path asked for without an upgrade: what reaches the server through a proxy that
  // does not pass upgrades on. Said as such, not as a route this server lacks, nor as a mistake
  // in the call the client was making (which a CLI would take for one of its command line).
  app.get(STREAM_PATH, async () => {
    throw new UnsupportedError(
      `GET ${STREAM_PATH} opens the stream, a WebSocket, and this request asked for no upgrade (Upgrade: websocket): a proxy in front must pass the Upgrade and Connection headers on (nginx: proxy_http_version 1.1 and both headers set), or use the HTTP transport`,
    );
  });
  // Not awaited here: the hooks run one after another, and the app's own (answering waiting long
  // polls) comes next. Closing the app waits for these connections' ends below (onClose), after
  // its HTTP requests in flight, their sessions closed before the storage is.
  app.addHook('preClose', async () => {
    shuttingDown ??= Promise.all([...connections].map((connection) => connection.shutDown()));
    server.close();
    stopWatchingDeletes();
  });
  app.addHook('onClose', async () => {
    await shuttingDown;
  });
  cutters.set(app, () => {
    if (shuttingDown === undefined || connections.size === 0) return;
    logger.warn(
      { connections: connections.size },
      'stream connections still answering after the shutdown timeout: cutting them',
    );
    for (const connection of connections) void connection.cut();
  });
}

/** The broker's time when it has a clock (lease deadlines are in it), else the wall clock. */

/** An upgrade that is refused gets a plain HTTP answer with the usual error body. */
function refuseUpgrade(
  socket: Duplex,
  status: number,
  error: { code: string; message: string },
  headers: Readonly<Record<string, string>> = {},
): void {
  const body = `${JSON.stringify({ error })}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      (status === 401 ? 'www-authenticate: Bearer\r\n' : '') +
      Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('') +
      'connection: close\r\n\r\n' +
      body,
  );
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  503: 'Service Unavailable',
};
