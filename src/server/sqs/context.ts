import type { FastifyBaseLogger } from 'fastify';
import type { Queue } from '../../broker/index.js';
import { NotFoundError, QUEUE_NAME } from '../../core/index.js';
import type { Action, Principal } from '../auth.js';
import type { Services } from '../route.js';
import type { QueueCatalog } from './catalog.js';
import { invalidParameter, missingParameter, queueDoesNotExist, SqsError } from './errors.js';
import type { MoveTasks } from './move-tasks.js';
import { optionalString, type SqsInput } from './params.js';

/** The SQS endpoint's settings. */
export interface SqsSettings {
  /** What QueueUrls start with, e.g. `https://queues.example.com`. Default: from the Host header. */
  baseUrl?: string;
  /** The region in ARNs. Default us-east-1. */
  region: string;
  /** The account id in QueueUrls and ARNs. Default 000000000000. */
  accountId: string;
  /**
   * A genuine receipt handle whose delivery is over, on DeleteMessage while the message still
   * exists: `refuse` answers InvalidParameterValue (default), `ignore` answers success as SQS
   * standard queues do (FIFO queues refuse either way, as SQS's do). Neither deletes anything.
   */
  staleReceipts: 'refuse' | 'ignore';
}

export const DEFAULT_SQS_SETTINGS: SqsSettings = {
  region: 'us-east-1',
  accountId: '000000000000',
  staleReceipts: 'refuse',
};

/** What every action may use. */
export interface SqsServices {
  services: Services;
  settings: SqsSettings;
  catalog: QueueCatalog;
  /** StartMessageMoveTask's tasks, running and recent. */
  moveTasks: MoveTasks;
}

/** One SQS request, parsed and authenticated. */
export interface SqsCall {
  action: string;
  input: SqsInput;
  principal: Principal;
  /** Origin of QueueUrls in answers, e.g. `http://127.0.0.1:7700`. */
  baseUrl: string;
  /** The queue the request was posted to (query protocol at a QueueUrl), if any. */
  pathQueue?: string;
  /**
   * The request's `X-Amzn-Trace-Id` header, if any (the AWS SDKs send it inside AWS Lambda):
   * the AWSTraceHeader of each message a send carries without one of its own, as SQS keeps it.
   */
  traceHeader?: string;
  log: FastifyBaseLogger;
  /** Aborts when the client goes away or the server shuts down. */
  signal: AbortSignal;
  clientGone(): boolean;
}

/** A right the key must hold on the queue: one of auth's actions (`read`: any right at all). */
export type Right = Action;

export function queueUrl(call: SqsCall, sqs: SqsServices, name: string): string {
  return `${call.baseUrl}/sqs/${sqs.settings.accountId}/${name}`;
}

export function queueArn(sqs: SqsServices, name: string): string {
  return `arn:aws:sqs:${sqs.settings.region}:${sqs.settings.accountId}:${name}`;
}

/**
 * The queue name a QueueUrl names: its last path segment, whatever the host (apps hard-code
 * `https://sqs.<region>.amazonaws.com/<account>/<name>`).
 */
export function queueNameOf(call: SqsCall): string {
  const url = optionalString(call.input, 'QueueUrl');
  if (url === undefined || url === '') {
    if (call.pathQueue !== undefined) return call.pathQueue;
    throw missingParameter('QueueUrl');
  }
  const name =
    url
      .replace(/[?#].*$/, '')
      .replace(/\/+$/, '')
      .split('/')
      .pop() ?? '';
  const decoded = safeDecode(name);
  if (decoded === undefined || !QUEUE_NAME.test(decoded)) {
    throw invalidParameter('QueueUrl', url, 'The QueueUrl does not name a queue.');
  }
  return decoded;
}

/** Checks that the caller holds `right` on the queue; refuses with AccessDenied. */
export function authorizeQueue(call: SqsCall, name: string, right: Right): void {
  const allowed = call.principal.can(right, name);
  if (!allowed) {
    throw new SqsError(
      'AccessDenied',
      `Access to the resource ${name} is denied: key ${call.principal.name} may not ${right === 'read' ? 'use' : right} on it.`,
    );
  }
}

/** The queue a request's QueueUrl names, after checking the caller's right on it. */
export async function resolveQueue(call: SqsCall, sqs: SqsServices, right: Right): Promise<Queue> {
  const name = queueNameOf(call);
  authorizeQueue(call, name, right);
  try {
    return await sqs.services.queues.existing(name);
  } catch (error) {
    if (error instanceof NotFoundError) throw queueDoesNotExist();
    throw error;
  }
}

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
