import { ClosedError, ValidationError } from '../../core/index.js';
import { inspectToWire, MAX_INSPECT_LIMIT } from '../../wire/index.js';
import { encodeForRequest } from '../content-coding.js';
import { type QueueParams, type RouteSpec, route, type Services } from '../route.js';
import { inspectView, object, queryCount, queueParams, stats } from '../schemas.js';

const TAG = 'observability';
const status = object({ status: { type: 'string' } }, ['status']);

/** `?limit=`: each list cut to its first `limit` entries, so a poll reads and sends little. */
const inspectQuery = object({
  limit: queryCount(
    `At most this many entries in each list, 1 to ${MAX_INSPECT_LIMIT} (default all)`,
  ),
});

function parseInspectLimit(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const limit = Number(raw);
  if (limit < 1 || limit > MAX_INSPECT_LIMIT) {
    throw new ValidationError(
      `limit must be an integer from 1 to ${MAX_INSPECT_LIMIT}, got ${raw}`,
    );
  }
  return limit;
}

/** Stats, inspection, health, readiness, metrics and the OpenAPI document itself. */
export function observabilityRoutes(services: Services, openApi: () => unknown): RouteSpec[] {
  const { broker, queues, receipts, metrics, shutdown } = services;
  return [
    route({
      method: 'GET',
      url: '/v1/queues/:name/stats',
      summary: 'R17 figures: counts by state, oldest ready age, counters (times in ms)',
      tag: TAG,
      access: 'read',
      params: queueParams,
      response: stats,
      async handle({ params }) {
        return (await queues.existing(params.name)).stats();
      },
    }),
    route<unknown, QueueParams, { limit?: string }>({
      method: 'GET',
      url: '/v1/queues/:name/inspect',
      summary:
        'The state of a queue: ready, delayed, active and dead, whole or the first `limit` of each (admin; takes no time)',
      tag: TAG,
      access: 'admin',
      params: queueParams,
      query: inspectQuery,
      response: inspectView,
      async handle({ params, query }) {
        const limit = parseInspectLimit(query.limit);
        const queue = await queues.existing(params.name);
        // The storage reads only the first `limit` of each list: a poll of a long queue is cheap.
        const view = await queue.inspect(limit === undefined ? undefined : { limit });
        return inspectToWire(view, receipts.forQueue(queue.name));
      },
    }),
    route<unknown, unknown>({
      method: 'GET',
      url: '/healthz',
      summary: 'The process is up and answering',
      tag: TAG,
      access: 'public',
      response: status,
      async handle() {
        return { status: 'ok' };
      },
    }),
    route<unknown, unknown>({
      method: 'GET',
      url: '/readyz',
      summary: 'The storage answers and the server is not shutting down (else 503)',
      tag: TAG,
      access: 'public',
      response: status,
      async handle() {
        if (shutdown.aborted) throw new ClosedError('the server is shutting down');
        // A read of one row: listing every queue took up to half a second at 20,000 queues on
        // SQLite, whose reads hold the event loop, at every probe.
        await (broker.checkStorage === undefined ? broker.listQueues() : broker.checkStorage());
        return { status: 'ready' };
      },
    }),
    route<unknown, unknown>({
      method: 'GET',
      url: '/metrics',
      summary:
        'Prometheus metrics: R17 figures of the queues the key may see (read at scrape), HTTP and stream traffic',
      tag: TAG,
      access: 'authenticated',
      response: { type: 'string' },
      contentType: 'text/plain',
      rawResponse: true,
      async handle({ reply, principal }) {
        const pieces = await metrics.renderPieces(() =>
          queues.visibleStats((name) => principal.canSee(name)),
        );
        reply.type(metrics.contentType).header('vary', 'accept-encoding');
        // Thousands of queues write megabytes of text, sent a piece at a time; Prometheus asks
        // for gzip.
        const encoded = encodeForRequest(pieces, reply.request.headers['accept-encoding']);
        if (encoded.encoding !== undefined) reply.header('content-encoding', encoded.encoding);
        return encoded.body;
      },
    }),
    route<unknown, unknown>({
      method: 'GET',
      url: '/openapi.json',
      summary: 'This API as an OpenAPI 3.1 document',
      tag: TAG,
      access: 'public',
      response: { type: 'object' },
      rawResponse: true,
      async handle() {
        return openApi();
      },
    }),
  ];
}
