import { DEFAULT_DELIVERY_PAGE, MAX_DELIVERY_PAGE, ValidationError } from '../../core/index.js';
import { ACTIONS, type Principal } from '../auth.js';
import type { StatsPage } from '../queue-directory.js';
import { type QueueParams, type RouteSpec, route, type Services } from '../route.js';
import {
  arrayOf,
  integer,
  jobId,
  object,
  queryCount,
  queueName,
  queueParams,
  stats,
} from '../schemas.js';

const TAG = 'overview';
const text = { type: 'string' };
const actions = arrayOf({ type: 'string', enum: [...ACTIONS] });

const liveDelivery = object(
  {
    token: integer(1),
    id: jobId,
    deliveredAt: integer(0),
    deadline: integer(0),
    deliveryCount: integer(1),
    session: { ...text, description: 'the session handle, when the delivery belongs to one' },
  },
  ['token', 'id', 'deliveredAt', 'deadline', 'deliveryCount'],
);

/** The limits a client needs to shape its requests (see operations.md for each). */
const PUBLISHED_LIMITS = [
  'maxBodyBytes',
  'maxPayloadBytes',
  'maxBatch',
  'maxWaitMs',
  'maxVisibilityMs',
  'maxDelayMs',
  'maxJsonDepth',
  'maxPrefetch',
  'maxSubscriptions',
] as const;

/** The most queues one page of `GET /v1/stats` answers. */
export const MAX_STATS_PAGE = 1000;

/** The longest queue name: a longer `contains` could match none. */
const MAX_QUEUE_NAME_LENGTH = 80;

interface StatsQuery {
  contains?: string;
  limit?: string;
  offset?: string;
}

/** `?contains=&offset=&limit=`: a page of the queues, so that a dashboard reads only its rows. */
const statsQuery = object({
  contains: {
    type: 'string',
    maxLength: MAX_QUEUE_NAME_LENGTH,
    description: 'Only the queues whose name contains this, upper or lower case alike',
  },
  limit: queryCount(`At most this many queues, 1 to ${MAX_STATS_PAGE} (default all)`),
  offset: queryCount('Skip this many of the matching queues, in name order (default 0)'),
});

function parseStatsPage(query: StatsQuery): StatsPage {
  const page: StatsPage = {};
  if (query.contains !== undefined) page.contains = query.contains;
  if (query.offset !== undefined) page.offset = Number(query.offset);
  if (query.limit !== undefined) {
    const limit = Number(query.limit);
    if (limit < 1 || limit > MAX_STATS_PAGE) {
      throw new ValidationError(
        `limit must be an integer from 1 to ${MAX_STATS_PAGE}, got ${query.limit}`,
      );
    }
    page.limit = limit;
  }
  return page;
}

/** What a dashboard or an operator reads across queues: every figure at once, and who am I. */
export function overviewRoutes(services: Services): RouteSpec[] {
  const { broker, queues, receipts, access, limits } = services;
  const visibleQueues = async (principal: Principal) =>
    (await broker.listQueues())
      .map((info) => info.name)
      .filter((name) => principal.canSee(name))
      .sort();
  return [
    route<unknown, unknown, StatsQuery>({
      method: 'GET',
      url: '/v1/stats',
      summary:
        'R17 figures of every queue this key can see (by name), or of a page of them; `total` counts the queues that match',
      tag: TAG,
      access: 'authenticated',
      query: statsQuery,
      response: object(
        {
          queues: arrayOf(object({ name: queueName, stats }, ['name', 'stats'])),
          total: integer(0),
        },
        ['queues', 'total'],
      ),
      async handle({ principal, query }) {
        const page = parseStatsPage(query);
        const { total, queues: read } = await queues.visibleStatsPage(
          (name) => principal.canSee(name),
          page,
        );
        return { queues: read.map(([name, figures]) => ({ name, stats: figures })), total };
      },
    }),
    route<unknown, unknown>({
      method: 'GET',
      url: '/v1/limits',
      summary:
        "The server's limits on requests, so that clients shape theirs to fit (the stream's ready frame names them too)",
      tag: TAG,
      access: 'authenticated',
      response: object(Object.fromEntries(PUBLISHED_LIMITS.map((name) => [name, integer(0)])), [
        ...PUBLISHED_LIMITS,
      ]),
      async handle() {
        return Object.fromEntries(PUBLISHED_LIMITS.map((name) => [name, limits[name]]));
      },
    }),
    route<unknown, unknown>({
      method: 'GET',
      url: '/v1/me',
      summary: "The calling key's name, its grants, and its rights on each queue it can see",
      tag: TAG,
      access: 'authenticated',
      response: object(
        {
          name: text,
          keysRequired: { type: 'boolean' },
          grants: arrayOf(object({ queues: text, actions }, ['queues', 'actions'])),
          queues: arrayOf(object({ name: queueName, actions }, ['name', 'actions'])),
        },
        ['name', 'keysRequired', 'grants', 'queues'],
      ),
      async handle({ principal }) {
        const names = await visibleQueues(principal);
        return {
          name: principal.name,
          keysRequired: access.enabled,
          grants: principal.grants,
          queues: names.map((name) => ({
            name,
            actions: ACTIONS.filter((action) => principal.can(action, name)),
          })),
        };
      },
    }),
    route<unknown, QueueParams, { limit?: string; after?: string }>({
      method: 'GET',
      url: '/v1/queues/:name/deliveries',
      summary:
        'A page of the live deliveries (in flight) in token order, the oldest first: job, token, delivery time, deadline, session; `next` starts the page after (admin)',
      tag: TAG,
      access: 'admin',
      params: queueParams,
      query: object({
        limit: queryCount(
          `At most this many, 1 to ${MAX_DELIVERY_PAGE} (default ${DEFAULT_DELIVERY_PAGE})`,
        ),
        after: { type: 'string', maxLength: 32, description: 'The `next` of the page before' },
      }),
      response: object({ deliveries: arrayOf(liveDelivery), next: text }, ['deliveries']),
      async handle({ params, query }) {
        const queue = await queues.existing(params.name);
        // A page read as such from the storage: thousands in flight, polled every 2 s by the
        // dashboard, were half a megabyte per answer. How many in all: `active` in the stats.
        const page = await queue.deliveryPage({
          ...(query.limit === undefined ? {} : { limit: Number(query.limit) }),
          ...(query.after === undefined ? {} : { after: query.after }),
        });
        return {
          ...page,
          deliveries: page.deliveries.map((entry) =>
            entry.session === undefined
              ? entry
              : { ...entry, session: receipts.issueSession(queue.name, entry.session) },
          ),
        };
      },
    }),
  ];
}
