import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifySchemaValidationError,
  LogController,
} from 'fastify';
import { pino } from 'pino';
import type { Broker } from '../broker/index.js';
import { onAbort } from '../broker/on-abort.js';
import { showName, UnknownNames } from '../core/errors.js';
import { ClosedError, ValidationError } from '../core/index.js';
import {
  AccessControl,
  type ApiKeyConfig,
  authorize,
  authorizeAny,
  type Principal,
} from './auth.js';
import { browserRefusal } from './browser-guard.js';
import { checkAppOptions } from './config.js';
import { mapError, ServerError } from './errors.js';
import { answerClientError, answerExpectation, answerFrameworkError } from './framework-errors.js';
import {
  checkJsonBody,
  DEFAULT_LIMITS,
  type Limits,
  LongPollGate,
  REQUEST_TIMEOUT_MARGIN_MS,
} from './limits.js';
import { ServerMetrics } from './metrics.js';
import { buildOpenApi } from './openapi.js';
import { QueueDirectory } from './queue-directory.js';
import { receiptSigningKeys, useStoredReceiptKeys } from './receipt-keys.js';
import { Receipts } from './receipts.js';
import type { RouteSpec, Services } from './route.js';
import { deadLetterRoutes } from './routes/dead-letters.js';
import { deliveryRoutes } from './routes/deliveries.js';
import { jobRoutes } from './routes/jobs.js';
import { observabilityRoutes } from './routes/observability.js';
import { operationRoutes } from './routes/operations.js';
import { overviewRoutes } from './routes/overview.js';
import { queueRoutes } from './routes/queues.js';
import { scheduleRoutes } from './routes/schedules.js';
import { sessionRoutes } from './routes/sessions.js';
import { buildSchemas, limitBehind, object } from './schemas.js';
import type { SqsSettings } from './sqs/context.js';
import { registerSqs } from './sqs/register.js';
import { HttpRequest, registerStream } from './stream/stream-endpoint.js';
import { registerDashboard } from './ui/dashboard.js';
import { VERSION } from './version.js';

/** Options of `createApp`. */
export interface AppOptions {
  /** The storage the API serves. The app does not close it. */
  broker: Broker;
  /** Defaults: DEFAULT_LIMITS. */
  limits?: Partial<Limits>;
  /** API keys. None: every request is allowed (the server must then listen on loopback only). */
  keys?: readonly ApiKeyConfig[];
  /**
   * The key receipts are signed with. Absent: the secret kept in the storage (made at the first
   * start), so restarts and every server over one storage agree.
   */
  receiptSecret?: string;
  /** Default: silent. */
  logger?: FastifyBaseLogger;
  /** Serve the web dashboard at /ui/ (and redirect / there). Default true. */
  ui?: boolean;
  /** Serve the SQS endpoint (docs/sqs.md) with these settings. Absent: no SQS endpoint. */
  sqs?: Partial<SqsSettings>;
}

/**
 * How often Node looks for requests past those times and past `headersTimeoutMs`: its default,
 * 30 s, let a request that stalled its headers hold its connection 34 s, not 10.
 */
const TIMEOUT_CHECK_MS = 1000;

/**
 * The HTTP API as a Fastify instance, routes registered and not listening. Closing it answers
 * waiting long polls (empty), refuses new requests with 503 and lets requests in flight finish.
 */
export async function createApp(options: AppOptions): Promise<FastifyInstance> {
  checkAppOptions(options);
  // A limit given as undefined keeps its default (a config written in JavaScript may say so).
  const given = Object.entries(options.limits ?? {}).filter(([, value]) => value !== undefined);
  const limits: Limits = { ...DEFAULT_LIMITS, ...Object.fromEntries(given) };
  const logger = options.logger ?? pino({ level: 'silent' });
  const receiptKeys = await receiptSigningKeys(options.broker, options.receiptSecret, logger);
  const receipts = new Receipts(receiptKeys[0] as string | Buffer);
  if (receiptKeys.length > 1) receipts.useKeys(receiptKeys);
  const stopReceiptKeys =
    options.receiptSecret === undefined
      ? await useStoredReceiptKeys(options.broker, receipts, logger)
      : () => {};
  const shutdown = new AbortController();
  const services: Services = {
    broker: options.broker,
    now: brokerNow(options.broker),
    queues: new QueueDirectory(options.broker),
    receipts,
    access: new AccessControl(options.keys ?? []),
    limits,
    schemas: buildSchemas(limits),
    longPolls: new LongPollGate(limits.maxLongPolls),
    metrics: new ServerMetrics(),
    shutdown: shutdown.signal,
  };
  const app = Fastify({
    loggerInstance: logger,
    // Access lines cost a tenth of a busy server's CPU: they are logged at debug (onResponse).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: limits.maxBodyBytes,
    // Parsed as plain JSON (own keys, inert): checkJsonBody refuses those keys with a message
    // that says so, where Fastify's own check answers that the body is not JSON.
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
    // A job id of 256 characters, percent-encoded, fits.
    routerOptions: { maxParamLength: 4096 },
    requestTimeout: limits.maxWaitMs + REQUEST_TIMEOUT_MARGIN_MS,
    http: {
      connectionsCheckingInterval: TIMEOUT_CHECK_MS,
      // Only a WebSocket upgrade is one; other Upgrade headers are ignored (see HttpRequest).
      IncomingMessage: HttpRequest,
      // Node would answer an HTTP/1.1 request without Host with an empty 400: the onRequest
      // hook refuses it in the API's shape.
      requireHostHeader: false,
    },
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    ajv: {
      customOptions: {
        allErrors: true,
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
      },
    },
    schemaErrorFormatter: (errors, where) => formatValidation(errors, where, limits),
    // Answered before any route hook runs: counted here, as onResponse counts the others.
    frameworkErrors: (error, request, reply) => {
      const sent = answerFrameworkError(error, request, reply);
      countRequest(services.metrics, request, reply);
      return sent;
    },
    clientErrorHandler: answerClientError,
  });
  app.server.headersTimeout = limits.headersTimeoutMs;
  app.server.on('checkExpectation', answerExpectation);
  // JSON only: any other content type is 415.
  app.removeContentTypeParser('text/plain');
  readStrictUtf8Json(app);
  installHooks(app, services);
  let document: unknown;
  const routes: RouteSpec[] = [
    ...queueRoutes(services),
    ...jobRoutes(services),
    ...deliveryRoutes(services),
    ...operationRoutes(services),
    ...sessionRoutes(services),
    ...deadLetterRoutes(services),
    ...scheduleRoutes(services),
    ...observabilityRoutes(services, () => document),
    ...overviewRoutes(services),
  ];
  document = buildOpenApi(routes, VERSION);
  for (const spec of routes) register(app, spec, services);
  if (options.ui ?? true) registerDashboard(app, logger);
  if (options.sqs !== undefined) registerSqs(app, services, options.sqs);
  registerStream(app, services, logger);
  // Waiting long polls answer (empty) before the server waits for requests in flight.
  app.addHook('preClose', async () => {
    stopReceiptKeys();
    shutdown.abort();
  });
  return app;
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });
/** The JSON text of a request's body, from its parsing until its check (preValidation). */
const bodyTexts = new WeakMap<FastifyRequest, string>();

/**
 * JSON bodies as Fastify reads them, but bytes that are not UTF-8 are refused rather than read
 * as U+FFFD: two ids of different bad bytes would otherwise be one id (R4), and a payload
 * would not be kept as sent.
 */
/** The charset parameter of a Content-Type, quoted or not. */
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)"?/i;

function readStrictUtf8Json(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('ignore', 'ignore');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const charset = CHARSET.exec(request.headers['content-type'] ?? '')?.[1];
    if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
      done(
        new ServerError(
          'UNSUPPORTED_MEDIA_TYPE',
          `a JSON body is UTF-8 (RFC 8259), not charset=${charset.slice(0, 64)}`,
        ),
        undefined,
      );
      return;
    }
    let text: string;
    try {
      text = STRICT_UTF8.decode(body as Buffer);
    } catch {
      done(new ValidationError('the request body is not well-formed UTF-8'), undefined);
      return;
    }
    // A DELETE takes no body: an empty one is none, from a client that names JSON on every
    // request.
    if (text === '' && request.method === 'DELETE') {
      done(null, undefined);
      return;
    }
    // Kept for the preValidation hook: only the text shows a number JSON.parse changed as sent.
    bodyTexts.set(request, text);
    parseJson(request, text, done);
  });
}

function installHooks(app: FastifyInstance, services: Services): void {
  app.addHook('onRequest', async (request, reply) => {
    countIfAborted(services.metrics, request, reply);
    if (services.shutdown.aborted) throw new ClosedError('the server is shutting down');
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      // As Node would (RFC 9112 §3.2): refused, and the connection closed after the answer.
      reply.raw.shouldKeepAlive = false;
      throw new ValidationError('an HTTP/1.1 request needs a Host header (RFC 9112)');
    }
    const refusal = browserRefusal(request.method, request.headers, services.access.enabled);
    if (refusal !== undefined) throw new ServerError('FORBIDDEN', refusal);
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      throw new ServerError('UNSUPPORTED_MEDIA_TYPE', 'compressed request bodies are not accepted');
    }
  });
  // Answers sent while shutting down close their connection, so that close() need not wait
  // for idle keep-alive connections.
  app.addHook('onSend', async (_request, reply, payload) => {
    if (services.shutdown.aborted) reply.header('connection', 'close');
    return endWithNewline(reply, payload);
  });
  app.addHook('preValidation', async (request) => {
    const text = bodyTexts.get(request);
    bodyTexts.delete(request);
    checkJsonBody(request.body, services.limits.maxJsonDepth, 'refuse', text);
    checkQueryGivenOnce(request);
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.debug(
      {
        method: request.method,
        url: request.url,
        status: reply.statusCode,
        responseTimeMs: reply.elapsedTime,
      },
      'request completed',
    );
    countRequest(services.metrics, request, reply);
  });
  app.setErrorHandler((error, request, reply) => {
    const mapped = mapError(mediaTypeRefusal(error, request) ?? error);
    if (mapped.internal) request.log.error({ err: error }, 'request failed');
    if (mapped.status === 401) reply.header('www-authenticate', 'Bearer');
    return reply.status(mapped.status).send(mapped.body);
  });
  app.setNotFoundHandler((_request, reply) =>
    reply.status(404).send({ error: { code: 'NOT_FOUND', message: 'no such route' } }),
  );
}

/**
 * Fastify refuses a body of another type than JSON with a bare "Unsupported Media Type": said
 * with the type that came and the one to send (`curl -d` sends a form type unless told).
 */
function mediaTypeRefusal(error: unknown, request: FastifyRequest): ServerError | undefined {
  if ((error as { code?: unknown }).code !== 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return undefined;
  const type = request.headers['content-type'];
  const sent = type === undefined || type === '' ? 'none' : JSON.stringify(type.slice(0, 64));
  return new ServerError(
    'UNSUPPORTED_MEDIA_TYPE',
    `request bodies are JSON: send Content-Type: application/json (this request's Content-Type: ${sent})`,
  );
}

const NO_QUERY = object({});
/**
 * The body of a route that takes none (a DELETE), when one is sent all the same: nothing, or an
 * object without fields. A field would be ignored, and the queue deleted whatever it asked
 * (`{"ifEmpty": true}`): refused as an unknown body field is everywhere else.
 */
const NO_BODY = { ...object({}), nullable: true };

function register(app: FastifyInstance, spec: RouteSpec, services: Services): void {
  const principals = new WeakMap<FastifyRequest, Principal>();
  const response = spec.rawResponse
    ? undefined
    : { response: Object.fromEntries((spec.statuses ?? [200]).map((s) => [s, spec.response])) };
  app.route({
    method: spec.method,
    url: spec.url,
    schema: {
      ...(spec.params === undefined ? {} : { params: spec.params }),
      // An API route without parameters refuses any, as a body refuses unknown fields; probes
      // and scrapers (/healthz, /metrics) may add their own.
      ...(spec.query === undefined && !spec.url.startsWith('/v1/')
        ? {}
        : { querystring: spec.query ?? NO_QUERY }),
      ...(spec.body !== undefined
        ? { body: spec.body }
        : spec.method === 'DELETE'
          ? { body: NO_BODY }
          : {}),
      ...response,
    },
    onRequest: async (request) => {
      if (spec.access === 'public') return;
      const principal = authenticate(request, spec, services);
      principals.set(request, principal);
      // With keys, each line of the request names the key it came with (as the stream's do).
      if (services.access.enabled) request.log = request.log.child({ key: principal.name });
    },
    handler: async (request, reply) => {
      const principal = principals.get(request) as Principal;
      return withSignals(reply, services.shutdown, (signal, clientGone) =>
        spec.handle({
          body: request.body,
          params: request.params,
          query: request.query,
          principal,
          log: request.log,
          signal,
          clientGone,
          reply,
        }),
      );
    },
  });
}

/** Authenticates the caller and checks its right on the queue the URL names, before parsing. */
function authenticate(request: FastifyRequest, spec: RouteSpec, services: Services): Principal {
  const principal = services.access.authenticate(request.headers.authorization);
  const queue = (request.params as { name?: string }).name;
  if (queue === undefined || spec.access === 'authenticated' || spec.access === 'public') {
    return principal;
  }
  if (spec.access === 'read') {
    authorizeAny(principal, queue);
  } else {
    authorize(principal, spec.access, queue);
  }
  return principal;
}

/** Runs a handler with a signal that aborts when the client goes away or the server stops. */
export async function withSignals<T>(
  reply: FastifyReply,
  shutdown: AbortSignal,
  run: (signal: AbortSignal, clientGone: () => boolean) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  let gone = false;
  const onClose = () => {
    if (!reply.raw.writableEnded) {
      gone = true;
      controller.abort();
    }
  };
  reply.raw.once('close', onClose);
  // A client that ends its side of the connection (a leaseq client ending a long poll) is gone
  // from then on: Node ends the connection at once, and nothing written after reaches it. Its
  // close comes a turn or two later, too late for an answer written in between.
  const { socket } = reply.raw;
  socket?.once('end', onClose);
  // Every request in flight watches `shutdown`: one listener on it for all of them.
  const unwatchShutdown = onAbort(shutdown, () => controller.abort());
  if (shutdown.aborted) controller.abort();
  try {
    return await run(
      controller.signal,
      () => gone || (socket !== null && (socket.writableEnded || socket.destroyed)),
    );
  } finally {
    reply.raw.off('close', onClose);
    socket?.off('end', onClose);
    unwatchShutdown();
  }
}

/** Requests already in the request metrics: each is counted once, answered or aborted. */
const counted = new WeakSet<FastifyRequest>();

/** A request answered, by its route's template (`unmatched` where no route took it). */
function countRequest(metrics: ServerMetrics, request: FastifyRequest, reply: FastifyReply): void {
  if (counted.has(request)) return;
  counted.add(request);
  metrics.observeRequest(
    request.method,
    request.routeOptions.url ?? 'unmatched',
    reply.statusCode,
    reply.elapsedTime / 1000,
  );
}

/**
 * A response that closes unfinished (its client went away, the socket closed) never emits
 * 'finish', so Fastify runs no onResponse for it: counted here instead, as `aborted`. Not by
 * onRequestAbort: Fastify runs it only where Node marks the request aborted, which it does not
 * once the body was read to its end (a POST long poll).
 */
function countIfAborted(
  metrics: ServerMetrics,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  reply.raw.once('close', () => {
    if (reply.raw.writableFinished || counted.has(request)) return;
    counted.add(request);
    metrics.requestAborted(request.method, request.routeOptions.url ?? 'unmatched');
  });
}

/** JSON answers end with a newline, as text printed to a terminal should (curl, logs). */
function endWithNewline(reply: FastifyReply, payload: unknown): unknown {
  const type = reply.getHeader('content-type');
  const json = typeof type === 'string' && type.startsWith('application/json');
  return json && typeof payload === 'string' && !payload.endsWith('\n') ? `${payload}\n` : payload;
}

/**
 * A parameter a route names that is given more than once (`?limit=1&limit=2`) comes as a list,
 * which its schema would refuse as not a string: said as it is instead. Parameters the route
 * does not name are left to its schema (unknown), and routes without one ignore them all.
 */
function checkQueryGivenOnce(request: FastifyRequest): void {
  const schema = request.routeOptions.schema?.querystring as
    | { properties?: Record<string, unknown> }
    | undefined;
  if (schema?.properties === undefined) return;
  for (const [name, value] of Object.entries(request.query as Record<string, unknown>)) {
    if (Array.isArray(value) && Object.hasOwn(schema.properties, name)) {
      const times = value.length === 2 ? 'twice' : `${value.length} times`;
      throw new ValidationError(`querystring.${name} is given ${times}; give it once`);
    }
  }
}

/** Every schema problem of a request, in one INVALID_ARGUMENT error. */
function formatValidation(
  errors: FastifySchemaValidationError[],
  where: string,
  limits: Limits,
): Error {
  const issues: string[] = [];
  const unknownNames = new UnknownNames(issues);
  for (const error of errors) {
    const path = `${where}${error.instancePath.replaceAll('/', '.')}`;
    const unknown = (error.params as { additionalProperty?: unknown }).additionalProperty;
    if (typeof unknown === 'string') {
      unknownNames.add('unknown field', () => `${path} has an unknown field ${showName(unknown)}`);
      continue;
    }
    const setting = limitBehind(error, limits);
    const because = setting === undefined ? '' : ` (this server's ${setting})`;
    issues.push(`${path} ${error.message ?? 'is not valid'}${because}`);
  }
  return new ValidationError(issues);
}

/** The broker's clock, read where it has one (an in-process broker); else the wall clock. */
export function brokerNow(broker: Broker): () => number {
  const clock = (broker as { clock?: { now?: unknown } }).clock;
  if (clock !== undefined && typeof clock.now === 'function') {
    const read = clock.now as () => number;
    return () => read.call(clock);
  }
  return () => Date.now();
}
