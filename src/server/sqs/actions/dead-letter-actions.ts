import { NotFoundError, QUEUE_NAME } from '../../../core/index.js';
import {
  authorizeQueue,
  queueArn,
  queueUrl,
  resolveQueue,
  type SqsCall,
  type SqsServices,
} from '../context.js';
import { invalidParameter, SqsError } from '../errors.js';
import { isFifo } from '../fifo.js';
import type { MoveTask } from '../move-tasks.js';
import {
  optionalInteger,
  optionalPageToken,
  optionalString,
  pageToken,
  requiredString,
} from '../params.js';
import type { ActionTable } from './action.js';

/** The queues whose RedrivePolicy names this one (R26), by name, a page at a time. */
async function listDeadLetterSourceQueues(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'read');
  const maxResults = optionalInteger(call.input, 'MaxResults', 1, 1000);
  const after = optionalPageToken(call.input);
  const names = (await sqs.services.broker.listQueues())
    .filter((info) => info.options.deadLetterQueue === queue.name)
    .map((info) => info.name)
    .filter((name) => call.principal.canSee(name))
    .filter((name) => after === undefined || name > after)
    .sort();
  const page = names.slice(0, maxResults ?? 1000);
  const last = page.at(-1);
  const more = maxResults !== undefined && names.length > page.length;
  return {
    queueUrls: page.map((name) => queueUrl(call, sqs, name)),
    ...(more && last !== undefined ? { NextToken: pageToken(last) } : {}),
  };
}

/**
 * Moves the messages of a dead-letter queue back to the queues they died in, or to
 * DestinationArn, keeping their MessageIds (SQS gives new ones; keeping them is better: the id
 * names the work). Answers at once; the task runs on (ListMessageMoveTasks shows it).
 */
async function startMessageMoveTask(call: SqsCall, sqs: SqsServices) {
  const sourceArn = requiredString(call.input, 'SourceArn');
  const source = nameOfArn('SourceArn', sourceArn);
  authorizeQueue(call, source, 'admin');
  const destinationArn = optionalString(call.input, 'DestinationArn');
  const destination =
    destinationArn === undefined ? undefined : nameOfArn('DestinationArn', destinationArn);
  if (destination !== undefined) authorizeQueue(call, destination, 'publish');
  const perSecond = optionalInteger(call.input, 'MaxNumberOfMessagesPerSecond', 1, 500);
  const all = await sqs.services.broker.listQueues();
  if (!all.some((info) => info.name === source)) throw notFound(`The queue ${source}`);
  if (destination !== undefined && !all.some((info) => info.name === destination)) {
    throw notFound(`The queue ${destination}`);
  }
  // As SQS: a FIFO dead-letter queue redrives to a FIFO queue, a standard one to a standard
  // one (a standard message has no group to keep a FIFO queue's order by).
  if (
    destination !== undefined &&
    isFifo(await sqs.catalog.get(source)) !== isFifo(await sqs.catalog.get(destination))
  ) {
    throw invalidParameter(
      'DestinationArn',
      destinationArn,
      'The destination queue must be the same type of queue as the source queue.',
    );
  }
  const sources = all
    .filter((info) => info.options.deadLetterQueue === source)
    .map((info) => info.name);
  if (sources.length === 0) {
    throw invalidParameter(
      'SourceArn',
      sourceArn,
      'Source queue must be configured as a Dead Letter Queue.',
    );
  }
  // Moved back, messages are published to the queues they died in: a key that may not publish
  // everywhere moves only those of the source queues, and needs the right on each.
  let origins: string[] | undefined;
  if (destination === undefined && !call.principal.canEverywhere('publish')) {
    authorizeMoveBack(call, source, sources);
    origins = sources;
  }
  // This queue, not its name: a task never goes on in a queue made again under the name once
  // this one is deleted, by this server or any other process sharing the storage.
  const { broker, queues } = sqs.services;
  const queue = broker.pinnedHandle?.(source) ?? (await queues.existing(source));
  const stats = await queue.stats();
  // Messages behind another of their group (R24) move too, each once the one before it has.
  const toMove = stats.ready + stats.delayed + stats.waiting;
  // Checked with no wait before the start: two starts at once would each find none running.
  if (sqs.moveTasks.running(source) !== undefined) {
    throw new SqsError(
      'UnsupportedOperation',
      `A message move task is already running for ${source}; cancel it or wait for it to end.`,
    );
  }
  const task = sqs.moveTasks.start(queue, { destination, origins, perSecond, toMove }, sourceArn);
  call.log.info({ queue: source, destination, toMove: task.toMove }, 'message move task started');
  return { TaskHandle: task.handle };
}

/**
 * Refuses a move back unless the key may publish on every source queue of the dead-letter
 * queue. A source the key may not see is not named, as ListDeadLetterSourceQueues leaves it out:
 * its name is not the key's to learn.
 */
function authorizeMoveBack(call: SqsCall, source: string, sources: readonly string[]): void {
  const denied = sources.filter((name) => !call.principal.can('publish', name));
  if (denied.length === 0) return;
  const named = denied.find((name) => call.principal.canSee(name));
  if (named !== undefined) authorizeQueue(call, named, 'publish');
  throw new SqsError(
    'AccessDenied',
    `Access to the resource ${source} is denied: key ${call.principal.name} may not publish on every queue whose RedrivePolicy names it, where messages moved back are sent; give a DestinationArn the key may publish on.`,
  );
}

async function listMessageMoveTasks(call: SqsCall, sqs: SqsServices) {
  const sourceArn = requiredString(call.input, 'SourceArn');
  const source = nameOfArn('SourceArn', sourceArn);
  authorizeQueue(call, source, 'read');
  const maxResults = optionalInteger(call.input, 'MaxResults', 1, 10) ?? 1;
  try {
    await sqs.services.queues.existing(source);
  } catch (error) {
    // As StartMessageMoveTask: an ARN naming no queue is an error, not an empty list.
    if (error instanceof NotFoundError) throw notFound(`The queue ${source}`);
    throw error;
  }
  const tasks = sqs.moveTasks.of(source).slice(0, maxResults);
  return { Results: tasks.map((task) => taskView(sqs, task)) };
}

async function cancelMessageMoveTask(call: SqsCall, sqs: SqsServices) {
  const handle = requiredString(call.input, 'TaskHandle');
  const task = sqs.moveTasks.byHandle(handle);
  if (task !== undefined) authorizeQueue(call, task.source, 'admin');
  if (task === undefined || !sqs.moveTasks.cancel(task)) {
    throw new SqsError(
      'ResourceNotFoundException',
      'The specified message move task does not exist or is not running.',
    );
  }
  return { ApproximateNumberOfMessagesMoved: task.moved };
}

function taskView(sqs: SqsServices, task: MoveTask) {
  return {
    ...(task.status === 'RUNNING' ? { TaskHandle: task.handle } : {}),
    Status: task.status,
    SourceArn: queueArn(sqs, task.source),
    ...(task.destination === undefined ? {} : { DestinationArn: queueArn(sqs, task.destination) }),
    ...(task.perSecond === undefined ? {} : { MaxNumberOfMessagesPerSecond: task.perSecond }),
    ApproximateNumberOfMessagesMoved: task.moved,
    ApproximateNumberOfMessagesToMove: task.toMove,
    ...(task.failureReason === undefined ? {} : { FailureReason: task.failureReason }),
    StartedTimestamp: task.startedMs,
  };
}

/** The queue an ARN names: its last `:` part, whatever the region and account. */
function nameOfArn(parameter: string, arn: string): string {
  const name = arn.split(':').pop() ?? '';
  if (!arn.startsWith('arn:') || !QUEUE_NAME.test(name)) {
    throw invalidParameter(parameter, arn, 'It is not the ARN of a queue.');
  }
  return name;
}

function notFound(what: string): SqsError {
  return new SqsError('ResourceNotFoundException', `${what} does not exist.`);
}

export const DEAD_LETTER_ACTIONS: ActionTable = {
  ListDeadLetterSourceQueues: listDeadLetterSourceQueues,
  StartMessageMoveTask: startMessageMoveTask,
  ListMessageMoveTasks: listMessageMoveTasks,
  CancelMessageMoveTask: cancelMessageMoveTask,
};
