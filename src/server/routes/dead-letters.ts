import { DEFAULT_DEAD_LETTER_PAGE, MAX_DEAD_LETTER_PAGE } from '../../core/index.js';
import { type QueueParams, type RouteSpec, route, type Services } from '../route.js';
import { arrayOf, integer, object, queryCount, queueParams, text } from '../schemas.js';

const TAG = 'dead letters';

/** Dead letters (R14): listing with history, redrive and purge. All need `admin`. */
export function deadLetterRoutes(services: Services): RouteSpec[] {
  const { queues, schemas } = services;
  return [
    route<unknown, QueueParams, { limit?: string; after?: string; payload?: 'true' | 'false' }>({
      method: 'GET',
      url: '/v1/queues/:name/dead-letters',
      summary:
        'A page of the dead jobs, in the order they died, each with its attempt history; `next` starts the page after; `payload=false` leaves the payloads out',
      tag: TAG,
      access: 'admin',
      params: queueParams,
      query: object({
        limit: queryCount(
          `At most this many, 1 to ${MAX_DEAD_LETTER_PAGE} (default ${DEFAULT_DEAD_LETTER_PAGE})`,
        ),
        after: {
          type: 'string',
          maxLength: 32,
          description: 'The `next` of the page before',
        },
        payload: {
          type: 'string',
          enum: ['true', 'false'],
          description:
            "`false` leaves each job's payload out, and the server asks its storage for none (a list of large payloads is megabytes; `GET …/jobs/{id}` reads one); default `true`",
        },
      }),
      response: object({ deadLetters: arrayOf(schemas.deadLetter), next: text }, ['deadLetters']),
      async handle({ params, query }) {
        const queue = await queues.existing(params.name);
        // Without payloads, none is read from the storage either: a page of 1000 jobs of
        // 200 KB each is 200 MB out of the database and on the wire.
        return queue.deadLetterPage({
          ...(query.limit === undefined ? {} : { limit: Number(query.limit) }),
          ...(query.after === undefined ? {} : { after: query.after }),
          ...(query.payload === 'false' ? { payloads: false } : {}),
        });
      },
    }),
    route<{ ids?: string[] }>({
      method: 'POST',
      url: '/v1/queues/:name/dead-letters/redrive',
      summary:
        'Move dead jobs (all, or the ids named) to the back of ready with deliveryCount 0, history kept',
      tag: TAG,
      access: 'admin',
      params: queueParams,
      body: schemas.ids,
      response: object({ redriven: integer(0) }, ['redriven']),
      async handle({ params, body, log }) {
        const queue = await queues.existing(params.name);
        const redriven = await queue.redrive(body.ids);
        log.info({ queue: queue.name, ids: body.ids, redriven }, 'redriven');
        return { redriven };
      },
    }),
    route<{ ids?: string[] }>({
      method: 'POST',
      url: '/v1/queues/:name/dead-letters/purge',
      summary: 'Remove dead jobs (all, or the ids named) for good',
      tag: TAG,
      access: 'admin',
      params: queueParams,
      body: schemas.ids,
      response: object({ purged: integer(0) }, ['purged']),
      async handle({ params, body, log }) {
        const queue = await queues.existing(params.name);
        const purged = await queue.purge(body.ids);
        log.info({ queue: queue.name, ids: body.ids, purged }, 'purged');
        return { purged };
      },
    }),
  ];
}
