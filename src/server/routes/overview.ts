import { ACTIONS, type Principal } from '../auth.js';
import { type RouteSpec, route, type Services } from '../route.js';
import { arrayOf, integer, jobId, object, queueName, queueParams, stats } from '../schemas.js';

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

/** What a dashboard or an operator reads across queues: every figure at once, and who am I. */
export function overviewRoutes(services: Services): RouteSpec[] {
  const { broker, queues, receipts, access, limits } = services;
  const visibleQueues = async (principal: Principal) =>
    (await broker.listQueues())
      .map((info) => info.name)
      .filter((name) => principal.canSee(name))
      .sort();
  return [
    route<unknown, unknown>({
      method: 'GET',
      url: '/v1/stats',
      summary: 'R17 figures of every queue this key can see, in one answer (by name)',
      tag: TAG,
      access: 'authenticated',
      response: object({ queues: arrayOf(object({ name: queueName, stats }, ['name', 'stats'])) }, [
        'queues',
      ]),
      async handle({ principal }) {
        const all = await queues.visibleStats((name) => principal.canSee(name));
        return { queues: all.map(([name, figures]) => ({ name, stats: figures })) };
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
    route({
      method: 'GET',
      url: '/v1/queues/:name/deliveries',
      summary:
        'The live deliveries (in flight) in token order: job, token, delivery time, deadline, session (admin)',
      tag: TAG,
      access: 'admin',
      params: queueParams,
      response: object({ deliveries: arrayOf(liveDelivery) }, ['deliveries']),
      async handle({ params }) {
        const queue = await queues.existing(params.name);
        const live = await queue.deliveries();
        return {
          deliveries: live.map((entry) =>
            entry.session === undefined
              ? entry
              : { ...entry, session: receipts.issueSession(queue.name, entry.session) },
          ),
        };
      },
    }),
  ];
}
