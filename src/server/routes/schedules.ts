import type { ScheduleWhen } from '../../broker/index.js';
import { ValidationError } from '../../core/index.js';
import { checkPayloadSize } from '../limits.js';
import { type RouteSpec, route, type Services } from '../route.js';
import { anyJson, arrayOf, type JsonSchema, object, queueName, text } from '../schemas.js';

const TAG = 'schedules';

const scheduleParams = object({ name: queueName, schedule: queueName }, ['name', 'schedule']);

const scheduleView: JsonSchema = object(
  {
    name: text,
    queue: text,
    cron: text,
    every: { type: 'integer' },
    timezone: text,
    payload: anyJson,
    createdAt: { type: 'integer' },
    lastAt: { type: 'integer' },
    nextAt: { type: 'integer' },
    problem: text,
  },
  ['name', 'queue', 'createdAt', 'nextAt'],
);

interface ScheduleBody {
  cron?: string;
  every?: number;
  timezone?: string;
  payload?: unknown;
}

/** Periodic jobs (R25): set, list and remove a queue's schedules. All need `admin`. */
export function scheduleRoutes(services: Services): RouteSpec[] {
  const { queues, limits } = services;
  return [
    route<ScheduleBody, { name: string; schedule: string }>({
      method: 'PUT',
      url: '/v1/queues/:name/schedules/:schedule',
      summary:
        'Create or replace a periodic job: `cron` (with `timezone`) or `every` (ms), publishing `payload` once per occurrence',
      tag: TAG,
      access: 'admin',
      params: scheduleParams,
      body: object({
        cron: text,
        every: { type: 'integer', minimum: 1000 },
        timezone: text,
        payload: anyJson,
      }),
      response: scheduleView,
      async handle({ params, body, log }) {
        // Every occurrence publishes this payload: held to the limit a publish is.
        checkPayloadSize(body.payload, limits.maxPayloadBytes, 'payload');
        const queue = await queues.existing(params.name);
        const { cron, every, ...options } = body;
        if ((cron === undefined) === (every === undefined)) {
          throw new ValidationError('give exactly one of cron and every');
        }
        const view = await queue.schedule(
          params.schedule,
          (cron ?? every) as ScheduleWhen,
          options,
        );
        log.info({ queue: queue.name, schedule: params.schedule }, 'schedule set');
        return view;
      },
    }),
    route({
      method: 'GET',
      url: '/v1/queues/:name/schedules',
      summary: "The queue's periodic jobs, by name, each with its next occurrence",
      tag: TAG,
      access: 'admin',
      params: object({ name: queueName }, ['name']),
      response: object({ schedules: arrayOf(scheduleView) }, ['schedules']),
      async handle({ params }) {
        const queue = await queues.existing(params.name);
        return { schedules: await queue.schedules() };
      },
    }),
    route<unknown, { name: string; schedule: string }>({
      method: 'DELETE',
      url: '/v1/queues/:name/schedules/:schedule',
      summary: 'Remove a periodic job (jobs it published stay)',
      tag: TAG,
      access: 'admin',
      params: scheduleParams,
      response: object({ removed: { type: 'boolean' } }, ['removed']),
      async handle({ params, log }) {
        const queue = await queues.existing(params.name);
        const removed = await queue.removeSchedule(params.schedule);
        log.info({ queue: queue.name, schedule: params.schedule, removed }, 'schedule removed');
        return { removed };
      },
    }),
  ];
}
