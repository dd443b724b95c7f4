import { STATUS_BY_CODE } from './errors.js';
import type { RouteSpec } from './route.js';
import { errorBody, type JsonSchema } from './schemas.js';

/** Expectation Failed: an Expect header other than 100-continue (answered with INVALID_ARGUMENT). */
const EXPECTATION_FAILED = 417;

/**
 * What any request may be answered with, whatever its route: refused as a request (400: no
 * Host, a malformed URL or query; 408: too slow; 417; 431), as one a web page may not send or,
 * on a keyless server, as one naming a host that is not loopback (403), for a compressed body
 * (415), or a failure (500) and shutdown (503).
 */
const ANY_REQUEST: readonly number[] = [
  STATUS_BY_CODE.INVALID_ARGUMENT,
  STATUS_BY_CODE.FORBIDDEN,
  STATUS_BY_CODE.REQUEST_TIMEOUT,
  STATUS_BY_CODE.UNSUPPORTED_MEDIA_TYPE,
  EXPECTATION_FAILED,
  STATUS_BY_CODE.HEADERS_TOO_LARGE,
  STATUS_BY_CODE.INTERNAL,
  STATUS_BY_CODE.CLOSED,
];

/** Which error statuses a route can answer with, by what it does. */
function errorStatuses(route: RouteSpec): number[] {
  const statuses = new Set<number>(ANY_REQUEST);
  if (route.access !== 'public') statuses.add(STATUS_BY_CODE.UNAUTHENTICATED);
  if (route.body !== undefined || route.params !== undefined || route.query !== undefined) {
    statuses.add(STATUS_BY_CODE.NOT_FOUND);
  }
  // A path segment over the router's limit.
  if (route.params !== undefined) statuses.add(STATUS_BY_CODE.URI_TOO_LONG);
  // A DELETE's body is read too, when it has one.
  if (route.body !== undefined || route.method === 'DELETE') {
    statuses.add(STATUS_BY_CODE.PAYLOAD_TOO_LARGE);
  }
  if (route.url.includes('/sessions')) statuses.add(STATUS_BY_CODE.SESSION_CLOSED);
  if (route.url.endsWith('/receive')) {
    statuses.add(STATUS_BY_CODE.SESSION_CLOSED);
    statuses.add(STATUS_BY_CODE.TOO_MANY_REQUESTS);
  }
  // Other options than the stored ones; a dead-letter chain that loops back (R26).
  if (route.method === 'PUT' || route.method === 'PATCH') statuses.add(STATUS_BY_CODE.CONFLICT);
  // A publish beyond a queue's maxLength (R31): QUEUE_FULL.
  if (route.access === 'publish') statuses.add(STATUS_BY_CODE.QUEUE_FULL);
  return [...statuses].sort((a, b) => a - b);
}

function parameters(params: JsonSchema | undefined, query: JsonSchema | undefined) {
  const inPath = (params?.properties ?? {}) as Record<string, JsonSchema>;
  const inQuery = (query?.properties ?? {}) as Record<
    string,
    JsonSchema & { description?: string }
  >;
  const required = new Set((query?.required ?? []) as string[]);
  return [
    ...Object.entries(inPath).map(([name, schema]) => ({
      name,
      in: 'path',
      required: true,
      schema,
    })),
    ...Object.entries(inQuery).map(([name, { description, ...schema }]) => ({
      name,
      in: 'query',
      required: required.has(name),
      ...(description === undefined ? {} : { description }),
      schema,
    })),
  ];
}

function operation(route: RouteSpec) {
  const contentType = route.contentType ?? 'application/json';
  const responses: Record<string, unknown> = {};
  for (const status of route.statuses ?? [200]) {
    responses[String(status)] = {
      description: route.summary,
      content: { [contentType]: { schema: route.response } },
    };
  }
  for (const status of errorStatuses(route)) {
    responses[String(status)] = { $ref: '#/components/responses/Error' };
  }
  return {
    summary: route.summary,
    tags: [route.tag],
    operationId: `${route.method.toLowerCase()}${route.url.replace(/[/:._-]+(\w)/g, (_, c: string) => c.toUpperCase())}`,
    ...(route.access === 'public' ? { security: [] } : {}),
    ...(route.access === 'public' || route.access === 'authenticated'
      ? {}
      : { 'x-leaseq-permission': route.access }),
    parameters: parameters(route.params, route.query),
    ...(route.body === undefined
      ? {}
      : {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: route.body } },
          },
        }),
    responses,
  };
}

/** The OpenAPI 3.1 document of the routes, built from the same schemas Fastify validates with. */
export function buildOpenApi(routes: readonly RouteSpec[], version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.url.replace(/:(\w+)/g, '{$1}');
    paths[path] ??= {};
    (paths[path] as Record<string, unknown>)[route.method.toLowerCase()] = operation(route);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'leaseq HTTP API',
      version,
      description:
        'A job queue built on visibility leases. Every error is { error: { code, message } }.',
    },
    servers: [{ url: '/' }],
    security: [{ apiKey: [] }],
    paths,
    components: {
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An API key: Authorization: Bearer <key>. Not needed on a loopback server without keys.',
        },
      },
      responses: {
        Error: {
          description: 'An error; `code` is stable, `message` is for people',
          content: { 'application/json': { schema: errorBody } },
        },
      },
    },
  };
}
