import { type RouteSpec, route, type Services } from '../route.js';
import { arrayOf, integer, object, queueParams } from '../schemas.js';

const TAG = 'dead letters';

/** Dead letters (R14): listing with history, redrive and purge. All need `admin`. */
export function deadLetterRoutes(services: Services): RouteSpec[] {
  const { queues, schemas } = services;
  return [
    route({
      method: 'GET',
      url: '/v1/queues/:name/dead-letters',
      summary: 'The dead jobs, in the order they died, each with its attempt history',
      tag: TAG,
      access: 'admin',
      params: queueParams,
      response: object({ deadLetters: arrayOf(schemas.deadLetter) }, ['deadLetters']),
      async handle({ params }) {
        const queue = await queues.existing(params.name);
        return { deadLetters: await queue.deadLetters() };
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
