import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { WebSocketServer } from 'ws';
import type { Broker } from '../../broker/index.js';
import { browserRefusal } from '../browser-guard.js';
import { mapError } from '../errors.js';
import type { Services } from '../route.js';
import { StreamConnection } from './stream-connection.js';

/** Where clients open the stream: `ws://host:port/v1/stream`. */
export const STREAM_PATH = '/v1/stream';

/**
 * Serves the stream (docs/stream.md) on the app's HTTP server: a WebSocket upgrade of
 * `GET /v1/stream`, authenticated with the same API keys as every route. Closing the app
 * closes every stream connection (1001, going away) before it waits for requests in flight.
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
  const now = brokerNow(services.broker);
  let counter = 0;
  const refuse: typeof refuseUpgrade = (socket, status, error) => {
    services.metrics.stream.upgradeRefused(error.code);
    refuseUpgrade(socket, status, error);
  };
  app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== STREAM_PATH) {
      refuse(socket, 404, { code: 'NOT_FOUND', message: 'no such route' });
      return;
    }
    let principal: ReturnType<Services['access']['authenticate']>;
    try {
      if (services.shutdown.aborted) {
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
    server.handleUpgrade(request, socket, head, (socket) => {
      counter += 1;
      const log = logger.child({ stream: counter, key: principal.name });
      log.debug('stream connected');
      const connection = new StreamConnection(socket, {
        services,
        principal,
        log,
        now,
        onEnded: () => {
          connections.delete(connection);
          log.debug('stream disconnected');
        },
      });
      connections.add(connection);
      services.metrics.stream.connectionOpened();
    });
  });
  app.addHook('preClose', async () => {
    const ending = [...connections].map((connection) =>
      connection.close(1001, 'server shutting down'),
    );
    server.close();
    stopWatchingDeletes();
    await Promise.all(ending);
  });
}

/** The broker's time when it has a clock (lease deadlines are in it), else the wall clock. */
function brokerNow(broker: Broker): () => number {
  const clock = (broker as { clock?: { now?: unknown } }).clock;
  if (clock !== undefined && typeof clock.now === 'function') {
    const read = clock.now as () => number;
    return () => read.call(clock);
  }
  return () => Date.now();
}

/** An upgrade that is refused gets a plain HTTP answer with the usual error body. */
function refuseUpgrade(
  socket: Duplex,
  status: number,
  error: { code: string; message: string },
): void {
  const body = `${JSON.stringify({ error })}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      (status === 401 ? 'www-authenticate: Bearer\r\n' : '') +
      'connection: close\r\n\r\n' +
      body,
  );
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  503: 'Service Unavailable',
};
