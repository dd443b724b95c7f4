import type { PublishInput } from '../../core/index.js';
import { NotFoundError } from '../../core/index.js';
import { checkPayloadSize } from '../limits.js';
import { type RouteSpec, route, type Services } from '../route.js';
import { arrayOf, jobParams, object, queueParams } from '../schemas.js';

const TAG = 'jobs';

export function jobRoutes(services: Services): RouteSpec[] {
  const { queues, schemas, limits } = services;
  return [
    route<PublishInput>({
      method: 'POST',
      url: '/v1/queues/:name/jobs',
      summary:
        'Publish one job; an id still present (or remembered, R4) answers duplicate: true and changes nothing',
      tag: TAG,
      access: 'publish',
      params: queueParams,
      body: schemas.publishInput,
      response: schemas.publishResult,
      async handle({ params, body, log }) {
        checkPayloadSize(body.payload, limits.maxPayloadBytes, 'payload');
        const queue = await queues.existing(params.name);
        const result = await queue.publish(body);
        log.debug(
          { queue: queue.name, jobId: result.id, duplicate: result.duplicate },
          'published',
        );
        return result;
      },
    }),
    route<{ jobs: PublishInput[] }>({
      method: 'POST',
      url: '/v1/queues/:name/jobs/batch',
      summary: 'Publish a batch of jobs, all or nothing (R5); results in the same order',
      tag: TAG,
      access: 'publish',
      params: queueParams,
      body: schemas.publishBatch,
      response: object({ results: arrayOf(schemas.publishResult) }, ['results']),
      async handle({ params, body, log }) {
        body.jobs.forEach((job, index) => {
          checkPayloadSize(job.payload, limits.maxPayloadBytes, `jobs[${index}].payload`);
        });
        const queue = await queues.existing(params.name);
        const results = await queue.publishBatch(body.jobs);
        log.debug({ queue: queue.name, jobs: results.length }, 'published a batch');
        return { results };
      },
    }),
    route<unknown, { name: string; id: string }>({
      method: 'GET',
      url: '/v1/queues/:name/jobs/:id',
      summary: 'One job by id (ready, delayed, waiting, active or dead) with its attempt history',
      tag: TAG,
      access: 'consume',
      params: jobParams,
      response: schemas.job,
      async handle({ params }) {
        const queue = await queues.existing(params.name);
        const job = await queue.job(params.id);
        if (job === undefined)
          throw new NotFoundError(`job ${params.id} is not in queue ${queue.name}`);
        return job;
      },
    }),
    route<{ remove?: boolean }, { name: string; id: string }>({
      method: 'POST',
      url: '/v1/queues/:name/jobs/:id/cancel',
      summary:
        'Cancel a job (R28): dead with reason cancelled, or removed; a live delivery of it ends at once and its receipt is refused from then on',
      tag: TAG,
      access: 'admin',
      params: jobParams,
      body: object({ remove: { type: 'boolean' } }),
      response: object({ cancelled: { type: 'boolean' } }, ['cancelled']),
      async handle({ params, body, log }) {
        const queue = await queues.existing(params.name);
        const cancelled = await queue.cancel(params.id, { remove: body?.remove ?? false });
        log.info({ queue: queue.name, jobId: params.id, cancelled }, 'cancel');
        return { cancelled };
      },
    }),
  ];
}
