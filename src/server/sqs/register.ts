import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { withSignals } from '../app.js';
import type { Services } from '../route.js';
import { SQS_ACTIONS } from './actions/index.js';
import { BrokerCatalog } from './catalog.js';
import { DEFAULT_SQS_SETTINGS, type SqsServices, type SqsSettings } from './context.js';
import { SqsError, toSqsError } from './errors.js';
import { jsonProtocol, targetAction } from './json-protocol.js';
import { SqsMetrics } from './metrics.js';
import { MoveTasks } from './move-tasks.js';
import type { SqsProtocol } from './protocol.js';
import { queryProtocol } from './query-protocol.js';
import { authenticateSigV4 } from './sigv4.js';

/**
 * The longest X-Amzn-Trace-Id kept as a message's AWSTraceHeader (an X-Ray header is about 100
 * characters): one a proxy or client made longer is not stored with every message it sends.
 */
const MAX_TRACE_HEADER_CHARS = 1024;

/** Room for a batch of SQS's largest messages in any encoding (JSON escapes, base64, forms). */
const SQS_BODY_BYTES = 4 * 1024 * 1024;
/**
 * Where SQS requests are answered: the endpoint, a QueueUrl, and `/` (QueueUrl origins). A
 * QueueUrl with a `/` after it too: the AWS SDK for JavaScript v3 given a QueueUrl as its
 * endpoint posts to the endpoint's path with `/` added, as it does to `/sqs/`.
 */
const PATHS = ['/', '/sqs', '/sqs/', '/sqs/:account/:queue', '/sqs/:account/:queue/'];

/**
 * The SQS endpoint on the API's port: AWS JSON 1.0 (current SDKs) and the query protocol
 * (older ones), each a thin translation onto the broker. `POST /` answers only requests that
 * say they are SQS (X-Amz-Target or a form body).
 */
export function registerSqs(
  app: FastifyInstance,
  services: Services,
  settings: Partial<SqsSettings> = {},
): void {
  const sqs: SqsServices = {
    services,
    settings: { ...DEFAULT_SQS_SETTINGS, ...settings },
    catalog: new BrokerCatalog(services.broker),
    moveTasks: new MoveTasks(services.shutdown),
  };
  // A task ends with its source queue: a queue made again under that name is another queue.
  const stopWatchingDeletes = services.queues.onDeleted((name) =>
    sqs.moveTasks.sourceDeleted(name),
  );
  app.addHook('onClose', async () => stopWatchingDeletes());
  const metrics = new SqsMetrics(services.metrics.registry, new Set(Object.keys(SQS_ACTIONS)));
  const protocols = { json: jsonProtocol(services.limits.maxJsonDepth), query: queryProtocol() };
  const bodyLimit = Math.max(services.limits.maxBodyBytes, SQS_BODY_BYTES);
  app.register(async (scope) => {
    // Bodies stay text: the signature covers their exact bytes, and each protocol parses its own.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string', bodyLimit }, (_request, body, done) =>
      done(null, body),
    );
    scope.setErrorHandler((error, request, reply) => {
      const protocol = chooseProtocol(request, protocols) ?? protocols.json;
      return answerError(protocol, reply, request, error, randomUUID());
    });
    for (const url of PATHS) {
      scope.post(url, { bodyLimit }, async (request, reply) => {
        const protocol = chooseProtocol(request, protocols);
        if (protocol === undefined) {
          return reply.status(404).send({ error: { code: 'NOT_FOUND', message: 'no such route' } });
        }
        return serve(sqs, metrics, protocol, request, reply);
      });
    }
  });
}

async function serve(
  sqs: SqsServices,
  metrics: SqsMetrics,
  protocol: SqsProtocol,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const started = performance.now();
  const requestId = randomUUID();
  const body = typeof request.body === 'string' ? request.body : '';
  let action = 'unknown';
  const seconds = () => (performance.now() - started) / 1000;
  try {
    const parsed = protocol.parse(request, body);
    action = parsed.action;
    const principal = authenticateSigV4(
      { method: request.method, url: request.url, headers: request.headers, body },
      sqs.services.access,
      Date.now(),
    );
    // With keys, each line of the request names the key it came with, as on /v1.
    if (sqs.services.access.enabled) request.log = request.log.child({ key: principal.name });
    const handle = SQS_ACTIONS[action];
    if (handle === undefined || !Object.hasOwn(SQS_ACTIONS, action)) {
      throw new SqsError('InvalidAction', `The action ${action} is not valid for this endpoint.`);
    }
    // `/sqs/<account>/` names no queue: the request's QueueUrl must.
    const pathQueue = (request.params as { queue?: string }).queue || undefined;
    const traceHeader = request.headers['x-amzn-trace-id'];
    const output = await withSignals(reply, sqs.services.shutdown, (signal, clientGone) =>
      handle(
        {
          action,
          input: parsed.input,
          principal,
          baseUrl: sqs.settings.baseUrl ?? `${request.protocol}://${request.headers.host}`,
          ...(pathQueue === undefined ? {} : { pathQueue }),
          ...(typeof traceHeader === 'string' &&
          traceHeader !== '' &&
          traceHeader.length <= MAX_TRACE_HEADER_CHARS
            ? { traceHeader }
            : {}),
          log: request.log,
          signal,
          clientGone,
        },
        sqs,
      ),
    );
    metrics.observe(action, 'OK', seconds());
    return protocol.success(reply, action, output, requestId);
  } catch (error) {
    const code = answerError(protocol, reply, request, error, requestId);
    metrics.observe(action, toSqsError(error).error.code, seconds());
    return code;
  }
}

function answerError(
  protocol: SqsProtocol,
  reply: FastifyReply,
  request: FastifyRequest,
  error: unknown,
  requestId: string,
): FastifyReply {
  const { error: sqsError, internal } = toSqsError(error);
  if (internal) request.log.error({ err: error }, 'SQS request failed');
  return protocol.failure(reply, sqsError, requestId);
}

/** JSON when the request says so (content type or X-Amz-Target), query for form bodies. */
function chooseProtocol(
  request: FastifyRequest,
  protocols: { json: SqsProtocol; query: SqsProtocol },
): SqsProtocol | undefined {
  const type = (request.headers['content-type'] ?? '').toLowerCase();
  if (type.includes('x-amz-json') || targetAction(request.headers['x-amz-target']) !== undefined) {
    return protocols.json;
  }
  if (type.startsWith('application/x-www-form-urlencoded')) return protocols.query;
  return request.url.startsWith('/sqs') ? protocols.query : undefined;
}
