import type { NackOptions, SessionOptions } from '../../core/index.js';
import { boundsFromWire } from '../../wire/index.js';
import { type RouteSpec, route, type Services } from '../route.js';
import { integer, object, queueParams, sessionHandle } from '../schemas.js';

const TAG = 'sessions';

type WireSessionOptions = { [K in keyof SessionOptions]: SessionOptions[K] | null };

interface UpToBody extends NackOptions {
  session: string;
  token: number;
}

/** Sessions (R16): consumer connections whose deliveries are released together when they end. */
export function sessionRoutes(services: Services): RouteSpec[] {
  const { queues, schemas, receipts } = services;
  const open = async (name: string, handle: string) => {
    const queue = await queues.existing(name);
    return { queue, sessionId: receipts.verifySession(queue.name, handle) };
  };
  return [
    route<WireSessionOptions>({
      method: 'POST',
      url: '/v1/queues/:name/sessions',
      summary:
        'Open a session (prefetch, heartbeat timeout and ack timeout in ms; null or absent: none)',
      tag: TAG,
      access: 'consume',
      params: queueParams,
      body: schemas.sessionOpen,
      response: object({ session: sessionHandle }, ['session']),
      statuses: [201],
      async handle({ params, body, reply, log }) {
        const queue = await queues.existing(params.name);
        const sessionId = await queue.openSession(boundsFromWire(body));
        log.info({ queue: queue.name, session: sessionId }, 'session opened');
        reply.status(201);
        return { session: receipts.issueSession(queue.name, sessionId) };
      },
    }),
    route<{ session: string }>({
      method: 'POST',
      url: '/v1/queues/:name/sessions/heartbeat',
      summary: 'Keep a session alive; SESSION_CLOSED (410) once it has ended',
      tag: TAG,
      access: 'consume',
      params: queueParams,
      body: schemas.session,
      response: object({}),
      async handle({ params, body }) {
        const { queue, sessionId } = await open(params.name, body.session);
        await queue.heartbeat(sessionId);
        return {};
      },
    }),
    route<{ session: string }>({
      method: 'POST',
      url: '/v1/queues/:name/sessions/close',
      summary: 'End a session; its live deliveries are released at once (R12, R13)',
      tag: TAG,
      access: 'consume',
      params: queueParams,
      body: schemas.session,
      response: object({ released: integer(0) }, ['released']),
      async handle({ params, body, log }) {
        const { queue, sessionId } = await open(params.name, body.session);
        const released = await queue.closeSession(sessionId);
        log.info({ queue: queue.name, session: sessionId, released }, 'session closed');
        return { released };
      },
    }),
    route<UpToBody>({
      method: 'POST',
      url: '/v1/queues/:name/sessions/ack-up-to',
      summary: 'Ack every live delivery of the session whose fencing token is ≤ token (R11)',
      tag: TAG,
      access: 'consume',
      params: queueParams,
      body: schemas.ackUpTo,
      response: object({ acked: integer(0) }, ['acked']),
      async handle({ params, body, log }) {
        const { queue, sessionId } = await open(params.name, body.session);
        const acked = await queue.ackUpTo(sessionId, body.token);
        log.info(
          { queue: queue.name, session: sessionId, upToToken: body.token, acked },
          'acked up to',
        );
        return { acked };
      },
    }),
    route<UpToBody>({
      method: 'POST',
      url: '/v1/queues/:name/sessions/nack-up-to',
      summary: 'Nack every live delivery of the session whose fencing token is ≤ token (R11)',
      tag: TAG,
      access: 'consume',
      params: queueParams,
      body: schemas.nackUpTo,
      response: object({ nacked: integer(0) }, ['nacked']),
      async handle({ params, body, log }) {
        const { queue, sessionId } = await open(params.name, body.session);
        const { requeue, delay, reason, error, attempted } = body;
        const nacked = await queue.nackUpTo(sessionId, body.token, {
          requeue,
          delay,
          reason,
          error,
          attempted,
        });
        log.info(
          { queue: queue.name, session: sessionId, upToToken: body.token, nacked, requeue },
          'nacked up to',
        );
        return { nacked };
      },
    }),
  ];
}
