import { runOperations } from '../operation-runner.js';
import { type RouteSpec, route, type Services } from '../route.js';
import { arrayOf, errorBody, type JsonSchema, object, queueParams } from '../schemas.js';

/**
 * Many operations of one queue in one request: each is parsed (the same parse as every other
 * door), authorized and answered on its own, in order; those that parse run as one unit of the
 * storage (one transaction, shared with other requests' operations). See runOperations.
 */
export function operationRoutes(services: Services): RouteSpec[] {
  const { queues, schemas, receipts, limits } = services;
  const entryError = (errorBody.properties as { error: JsonSchema }).error;
  return [
    route<{ operations: unknown[] }>({
      method: 'POST',
      url: '/v1/queues/:name/operations',
      summary:
        'Run a batch of operations on one queue, answered in order; one refused operation does not fail the others',
      tag: 'operations',
      // Some right on the queue, checked before it is looked up: a key with none is refused
      // alike whether the queue exists or not (each operation's own right is checked after).
      access: 'read',
      params: queueParams,
      body: schemas.operations,
      response: object(
        {
          results: arrayOf(
            object({ ok: { type: 'boolean' }, value: {}, error: entryError }, ['ok']),
          ),
        },
        ['results'],
      ),
      async handle({ params, body, principal, log }) {
        const queue = await queues.existing(params.name);
        const results = await runOperations(
          { queue, principal, receipts, limits, log, queues },
          body.operations,
        );
        return { results };
      },
    }),
  ];
}
