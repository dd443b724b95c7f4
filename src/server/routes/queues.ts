import type { Queue } from '../../broker/index.js';
import {
  NotFoundError,
  type QueueOptions,
  type ResolvedQueueOptions,
  type ValidationError,
} from '../../core/index.js';
import { boundsFromWire, boundsToWire } from '../../wire/index.js';
import { authorizeDeadLetterQueue, hidingForeignLoops } from '../auth.js';
import { defaultVisibilityProblem } from '../limits.js';
import type { QueueDirectory } from '../queue-directory.js';
import { type QueueParams, type RouteSpec, route, type Services } from '../route.js';
import { arrayOf, object, queueName, queueParams } from '../schemas.js';

/** Queue options as JSON sends them: `null` for an unbounded option. */
type WireQueueOptions = { [K in keyof QueueOptions]: QueueOptions[K] | null };

const TAG = 'queues';

export function queueRoutes(services: Services): RouteSpec[] {
  const { broker, queues, schemas, limits } = services;
  const queueView = object({ name: queueName, options: schemas.queueOptionsOut }, [
    'name',
    'options',
  ]);
  const view = (name: string, options: ResolvedQueueOptions) => ({
    name,
    options: boundsToWire(options),
  });
  return [
    route<unknown, unknown>({
      method: 'GET',
      url: '/v1/queues',
      summary: 'List the queues this key can see, with their options',
      tag: TAG,
      access: 'authenticated',
      response: object({ queues: arrayOf(queueView) }, ['queues']),
      async handle({ principal }) {
        const all = await broker.listQueues();
        return {
          queues: all
            .filter((info) => principal.canSee(info.name))
            .map((info) => view(info.name, info.options)),
        };
      },
    }),
    route<WireQueueOptions>({
      method: 'PUT',
      url: '/v1/queues/:name',
      summary:
        'Create a queue (201), or open an existing one (200); other options than the stored ones are a CONFLICT',
      tag: TAG,
      access: 'admin',
      params: queueParams,
      body: schemas.queueOptionsIn,
      response: object(
        { name: queueName, options: schemas.queueOptionsOut, created: { type: 'boolean' } },
        ['name', 'options', 'created'],
      ),
      statuses: [201, 200],
      async handle({ params, body, reply, principal }) {
        const options = boundsFromWire(body);
        if (typeof options.deadLetterQueue === 'string') {
          authorizeDeadLetterQueue(principal, options.deadLetterQueue);
        }
        // An existing queue keeps the lease it has; only a new one would take the default. Where
        // that default is above the limit, only a queue the storage holds is opened: none is
        // created, even if another process deletes it meanwhile.
        const tooLong =
          options.visibility === undefined ? defaultVisibilityProblem(limits) : undefined;
        const { queue, created } = await hidingForeignLoops(principal, () =>
          tooLong === undefined
            ? queues.create(params.name, options)
            : openedOrTooLong(queues, params.name, options, tooLong),
        );
        reply.status(created ? 201 : 200);
        return { ...view(queue.name, await queue.options()), created };
      },
    }),
    route({
      method: 'GET',
      url: '/v1/queues/:name',
      summary: 'One queue and its options',
      tag: TAG,
      access: 'read',
      params: queueParams,
      response: queueView,
      async handle({ params }) {
        const queue = await queues.existing(params.name);
        return view(queue.name, await queue.options());
      },
    }),
    route<WireQueueOptions, QueueParams>({
      method: 'PATCH',
      url: '/v1/queues/:name',
      summary: 'Change some options; deliveries already made keep their deadlines',
      tag: TAG,
      access: 'admin',
      params: queueParams,
      body: schemas.queueOptionsIn,
      response: queueView,
      async handle({ params, body, principal }) {
        const options = boundsFromWire(body);
        if (typeof options.deadLetterQueue === 'string') {
          authorizeDeadLetterQueue(principal, options.deadLetterQueue);
        }
        return view(
          params.name,
          await hidingForeignLoops(principal, () => broker.updateQueue(params.name, options)),
        );
      },
    }),
    route({
      method: 'DELETE',
      url: '/v1/queues/:name',
      summary: 'Delete a queue and every job in it; `deleted` is false when there was none',
      tag: TAG,
      access: 'admin',
      params: queueParams,
      response: object({ deleted: { type: 'boolean' } }, ['deleted']),
      async handle({ params }) {
        return { deleted: await queues.delete(params.name) };
      },
    }),
  ];
}

/** The queue as the storage holds it, or `tooLong` when there is none (nothing is created). */
async function openedOrTooLong(
  queues: QueueDirectory,
  name: string,
  options: QueueOptions,
  tooLong: ValidationError,
): Promise<{ queue: Queue; created: false }> {
  try {
    return { queue: await queues.openStored(name, options), created: false };
  } catch (error) {
    if (error instanceof NotFoundError) throw tooLong;
    throw error;
  }
}
