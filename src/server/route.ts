import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { Broker } from '../broker/index.js';
import type { AccessControl, Action, Principal } from './auth.js';
import type { Limits, LongPollGate } from './limits.js';
import type { ServerMetrics } from './metrics.js';
import type { QueueDirectory } from './queue-directory.js';
import type { Receipts } from './receipts.js';
import type { JsonSchema, Schemas } from './schemas.js';

/** Who may call a route: anyone, any holder of a valid key, or a key with rights on the queue. */
export type Access = 'public' | 'authenticated' | Action;

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteContext<Body, Params, Query = unknown> {
  body: Body;
  params: Params;
  /** The query string's parameters, as `query` describes them (strings). */
  query: Query;
  principal: Principal;
  log: FastifyBaseLogger;
  /** Aborts when the client goes away or the server begins to shut down. */
  signal: AbortSignal;
  /** true once the client has gone away: an answer would reach nobody. */
  clientGone(): boolean;
  reply: FastifyReply;
}

/**
 * One route of the API: its schemas (which Fastify validates and serializes with, and the
 * OpenAPI document is built from), who may call it, and its handler.
 */
export interface RouteSpec<Body = unknown, Params = unknown, Query = unknown> {
  method: Method;
  /** Fastify's form, `/v1/queues/:name`. */
  url: string;
  summary: string;
  tag: string;
  access: Access;
  params?: JsonSchema;
  /** The query string's parameters: an object schema of optional strings. */
  query?: JsonSchema;
  body?: JsonSchema;
  /** The body of the success response. */
  response: JsonSchema;
  /** The success statuses the route answers with. Default [200]. */
  statuses?: number[];
  /** Default application/json. */
  contentType?: string;
  /** The handler's value is sent as it is, not serialized by the response schema. */
  rawResponse?: boolean;
  handle(context: RouteContext<Body, Params, Query>): Promise<unknown>;
}

/** Everything the routes share. */
export interface Services {
  broker: Broker;
  /**
   * The broker's time (its Clock, synced to a shared storage's), for what the server compares
   * with the deadlines it hands out; the wall clock where the broker has none of its own.
   */
  now: () => number;
  queues: QueueDirectory;
  receipts: Receipts;
  access: AccessControl;
  limits: Limits;
  schemas: Schemas;
  longPolls: LongPollGate;
  metrics: ServerMetrics;
  /** Aborts when the server begins to shut down. */
  shutdown: AbortSignal;
}

export interface QueueParams {
  name: string;
}

/** Lets a typed route sit in a list of routes. */
export function route<Body = unknown, Params = QueueParams, Query = unknown>(
  spec: RouteSpec<Body, Params, Query>,
): RouteSpec {
  return spec as RouteSpec;
}
