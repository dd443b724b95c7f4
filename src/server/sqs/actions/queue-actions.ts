import { randomUUID } from 'node:crypto';
import { ConflictError, type QueueOptions } from '../../../core/index.js';
import { hidingForeignLoops } from '../../auth.js';
import {
  type AttributeChange,
  fifoRequested,
  keepingLargerLimit,
  parseQueueAttributes,
  type QueueFacts,
  readQueueAttributes,
  SQS_QUEUE_OPTIONS,
  storedAttribute,
} from '../attributes.js';
import type { QueueMeta } from '../catalog.js';
import {
  authorizeQueue,
  queueArn,
  queueUrl,
  resolveQueue,
  type SqsCall,
  type SqsServices,
} from '../context.js';
import { rememberFormerDeadLetterQueue } from '../dead-letter-history.js';
import { invalidParameter, missingParameter, queueDoesNotExist, SqsError } from '../errors.js';
import { FIFO_DEDUP_WINDOW_MS, isFifo } from '../fifo.js';
import {
  optionalInteger,
  optionalPageToken,
  optionalString,
  pageToken,
  requiredString,
  stringList,
  stringMap,
} from '../params.js';
import type { ActionTable } from './action.js';

const STANDARD_QUEUE_NAME = /^[A-Za-z0-9_-]{1,80}$/;
/** The `.fifo` suffix counts toward the 80 characters. */
const FIFO_QUEUE_NAME = /^[A-Za-z0-9_-]{1,75}\.fifo$/;
const DEFAULT_VISIBILITY_MS = 30_000;
/** SQS's MessageRetentionPeriod when none is given: 4 days. */
const DEFAULT_RETENTION_MS = 345_600_000;
const MAX_TAGS = 50;

async function createQueue(call: SqsCall, sqs: SqsServices) {
  const name = requiredString(call.input, 'QueueName');
  const given = stringMap(call.input, 'Attributes');
  const fifo = fifoRequested(given);
  checkQueueName(name, fifo);
  authorizeQueue(call, name, 'admin');
  const tags = checkTags(stringMap(call.input, 'tags'));
  const change = parseQueueAttributes(given, fifo, sqs.services.limits);
  // Naming a dead-letter queue takes the right to send there whether the queue exists or not,
  // as PUT /v1/queues/{name} has it: refused before an existing queue's attributes are matched.
  if (typeof change.redriveTarget === 'string') {
    authorizeQueue(call, change.redriveTarget, 'publish');
  }
  const { broker, queues, limits } = sqs.services;
  if (change.options.visibility === undefined && DEFAULT_VISIBILITY_MS > limits.maxVisibilityMs) {
    throw invalidParameter(
      'VisibilityTimeout',
      DEFAULT_VISIBILITY_MS / 1000,
      `the default of 30 seconds is above this server's maxVisibilityMs of ${limits.maxVisibilityMs}: give the queue a VisibilityTimeout of at most ${Math.floor(limits.maxVisibilityMs / 1000)}.`,
    );
  }
  const url = queueUrl(call, sqs, name);
  // One CreateQueue of a name at a time here: another must not find the queue made but its
  // attributes not yet written (and refuse them), nor write its own over them.
  return sqs.catalog.exclusive(name, async () => {
    const existing = (await broker.listQueues()).find((info) => info.name === name);
    if (existing !== undefined) {
      await checkSameAttributes(sqs, name, given, change.stored);
      return { QueueUrl: url };
    }
    await checkRedriveTarget(call, sqs, change, fifo);
    const options: QueueOptions = {
      ...SQS_QUEUE_OPTIONS,
      ...change.options,
      visibility: change.options.visibility ?? DEFAULT_VISIBILITY_MS,
      // SQS keeps a message 4 days unless told otherwise (R30: it then dies as `expired`).
      retention: change.options.retention ?? DEFAULT_RETENTION_MS,
      // A repeated send is a duplicate while its message is in the queue and this long after.
      ...(fifo ? { dedupWindow: FIFO_DEDUP_WINDOW_MS } : {}),
    };
    if (options.deadLetterQueue === null) delete options.deadLetterQueue;
    let created: boolean;
    try {
      ({ created } = await hidingForeignLoops(call.principal, () => queues.create(name, options)));
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
      // Created meanwhile by another caller, or a dead-letter queue that loops back (R26).
      if ((await broker.listQueues()).some((info) => info.name === name)) {
        throw nameExists(name, 'its options');
      }
      throw invalidParameter('RedrivePolicy', given.RedrivePolicy, error.message);
    }
    if (!created) {
      // Made meanwhile, with the same options, by another server of the storage: its
      // attributes are the queue's, to be matched as for any existing queue, not overwritten.
      await checkSameAttributes(sqs, name, given, change.stored);
      return { QueueUrl: url };
    }
    const now = Date.now();
    await sqs.catalog.put(name, {
      attributes: change.stored,
      tags,
      createdMs: now,
      modifiedMs: now,
      // Its own, not the name alone: messages of a queue deleted before under this name may
      // still be in a dead-letter queue, and a send here must not meet their job ids.
      ...(fifo ? { fifoIdKey: `${name}#${randomUUID()}` } : {}),
    });
    return { QueueUrl: url };
  });
}

/**
 * SQS's queue names: 1 to 80 letters, digits, `-` and `_`; a FIFO queue's end in `.fifo`
 * (counted in the 80), and only a FIFO queue's do.
 */
function checkQueueName(name: string, fifo: boolean): void {
  if (fifo && !FIFO_QUEUE_NAME.test(name)) {
    throw invalidParameter(
      'QueueName',
      name,
      'The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.',
    );
  }
  if (!fifo && !STANDARD_QUEUE_NAME.test(name)) {
    throw invalidParameter(
      'QueueName',
      name,
      `Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length.${
        name.endsWith('.fifo') ? ' A name ending in .fifo is a FIFO queue: set FifoQueue=true.' : ''
      }`,
    );
  }
}

/** CreateQueue of an existing queue succeeds only when it names no other attribute value. */
async function checkSameAttributes(
  sqs: SqsServices,
  name: string,
  given: Record<string, string>,
  stored: Record<string, string>,
): Promise<void> {
  // Each value as GetQueueAttributes would answer it; undefined: the queue must not have it
  // (a policy given as "" is no policy, as SetQueueAttributes reads it).
  const asStored = { attributes: stored, tags: {}, createdMs: 0, modifiedMs: 0 };
  const expected: Record<string, string | undefined> = Object.fromEntries(
    Object.keys(stored).map((attribute) => [attribute, storedAttribute(asStored, attribute)]),
  );
  for (const name of ['VisibilityTimeout', 'MessageRetentionPeriod']) {
    if (given[name] !== undefined) expected[name] = String(Number(given[name]));
  }
  const redrive = parseQueueAttributes(
    given.RedrivePolicy === undefined ? {} : { RedrivePolicy: given.RedrivePolicy },
    false,
  ).options;
  if (redrive.deadLetterQueue === null) {
    expected.RedrivePolicy = undefined;
  } else if (redrive.deadLetterQueue !== undefined) {
    expected.RedrivePolicy = JSON.stringify({
      deadLetterTargetArn: queueArn(sqs, redrive.deadLetterQueue),
      maxReceiveCount: redrive.maxDeliveries,
    });
  }
  const queue = await sqs.services.queues.existing(name);
  const current = await readQueueAttributes(
    Object.keys(expected),
    await facts(sqs, name, queue.options(), () => queue.stats()),
  );
  for (const [attribute, value] of Object.entries(expected)) {
    if (current[attribute] !== value) throw nameExists(name, `attribute ${attribute}`);
  }
}

function nameExists(name: string, what: string): SqsError {
  return new SqsError(
    'QueueNameExists',
    `A queue named ${name} already exists with a different value for ${what}.`,
  );
}

async function facts(
  sqs: SqsServices,
  name: string,
  options: QueueFacts['options'] | Promise<QueueFacts['options']>,
  stats: QueueFacts['stats'],
): Promise<QueueFacts> {
  return {
    arn: queueArn(sqs, name),
    arnOf: (queue) => queueArn(sqs, queue),
    options: await options,
    meta: await sqs.catalog.get(name),
    stats,
  };
}

async function getQueueUrl(call: SqsCall, sqs: SqsServices) {
  const name = requiredString(call.input, 'QueueName');
  authorizeQueue(call, name, 'read');
  const found = (await sqs.services.broker.listQueues()).some((info) => info.name === name);
  if (!found) throw queueDoesNotExist();
  return { QueueUrl: queueUrl(call, sqs, name) };
}

async function listQueues(call: SqsCall, sqs: SqsServices) {
  const prefix = optionalString(call.input, 'QueueNamePrefix') ?? '';
  const maxResults = optionalInteger(call.input, 'MaxResults', 1, 1000);
  const after = optionalPageToken(call.input);
  const names = (await sqs.services.broker.listQueues())
    .map((info) => info.name)
    .filter((name) => name.startsWith(prefix) && call.principal.canSee(name))
    .filter((name) => after === undefined || name > after)
    .sort();
  const page = names.slice(0, maxResults ?? 1000);
  const more = maxResults !== undefined && names.length > page.length;
  const last = page.at(-1);
  return {
    ...(page.length > 0 ? { QueueUrls: page.map((name) => queueUrl(call, sqs, name)) } : {}),
    ...(more && last !== undefined ? { NextToken: pageToken(last) } : {}),
  };
}

async function deleteQueue(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'admin');
  // Not between another change's read and write of its metadata, which would write it back.
  await sqs.catalog.exclusive(queue.name, async () => {
    await sqs.services.queues.delete(queue.name);
    await sqs.catalog.delete(queue.name);
  });
  return {};
}

async function getQueueAttributes(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'read');
  const names = stringList(call.input, 'AttributeNames');
  const attributes = await readQueueAttributes(
    names,
    await facts(sqs, queue.name, queue.options(), () => queue.stats()),
  );
  return Object.keys(attributes).length > 0 ? { Attributes: attributes } : {};
}

async function setQueueAttributes(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'admin');
  // Required, as SQS has it: a call without it sets nothing, which a caller did not mean.
  if (call.input.Attributes === undefined || call.input.Attributes === null) {
    throw missingParameter('Attributes');
  }
  const given = stringMap(call.input, 'Attributes');
  const fifo = isFifo(await sqs.catalog.get(queue.name));
  const change = parseQueueAttributes(given, fifo, sqs.services.limits);
  await checkRedriveTarget(call, sqs, change, fifo);
  // A RedrivePolicy given: the dead-letter queue and limit it replaces.
  const before = change.redriveTarget === undefined ? undefined : await queue.options();
  // Only a queue with a dead-letter queue shows its limit as a policy (1000 for a larger one):
  // one without (no policy, or one removed) has an unbounded limit, and takes 1000 as given.
  const options =
    before?.deadLetterQueue === undefined
      ? change.options
      : keepingLargerLimit(change.options, before.maxDeliveries);
  if (Object.keys(options).length > 0) {
    try {
      await hidingForeignLoops(call.principal, () =>
        sqs.services.broker.updateQueue(queue.name, options),
      );
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
      throw invalidParameter('RedrivePolicy', given.RedrivePolicy, error.message);
    }
  }
  // Its messages that died into a dead-letter queue replaced or removed stay there (R26): the
  // queue still looks for them there.
  const replaced =
    before?.deadLetterQueue === change.redriveTarget ? undefined : before?.deadLetterQueue;
  const until = sqs.services.now();
  const existing =
    replaced === undefined
      ? new Set<string>()
      : new Set((await sqs.services.broker.listQueues()).map((info) => info.name));
  await updateMeta(sqs, queue.name, (meta) => {
    const next = { ...meta, attributes: { ...meta.attributes, ...change.stored } };
    return replaced === undefined
      ? next
      : rememberFormerDeadLetterQueue(next, replaced, until, existing);
  });
  return {};
}

/**
 * Applies a change to a queue's metadata (a queue made outside SQS starts with none), read and
 * written with no other change of it in between: concurrent changes all stay.
 */
async function updateMeta(
  sqs: SqsServices,
  name: string,
  change: (meta: QueueMeta) => QueueMeta,
): Promise<void> {
  await sqs.catalog.update(name, (stored) => {
    const now = Date.now();
    const meta = stored ?? { attributes: {}, tags: {}, createdMs: now, modifiedMs: now };
    return { ...change(meta), modifiedMs: now };
  });
}

async function tagQueue(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'admin');
  // Required, as SQS has them: a call without them changes nothing, which a caller did not mean.
  requireMember(call, 'Tags');
  const tags = stringMap(call.input, 'Tags');
  checkTags(tags);
  // The limit counts the tags the queue has when they are added, not when they were read.
  await updateMeta(sqs, queue.name, (old) => ({
    ...old,
    tags: checkTags({ ...old.tags, ...tags }),
  }));
  return {};
}

async function untagQueue(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'admin');
  requireMember(call, 'TagKeys');
  const keys = new Set(stringList(call.input, 'TagKeys'));
  await updateMeta(sqs, queue.name, (old) => ({
    ...old,
    tags: Object.fromEntries(Object.entries(old.tags).filter(([key]) => !keys.has(key))),
  }));
  return {};
}

async function listQueueTags(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'read');
  const tags = (await sqs.catalog.get(queue.name))?.tags ?? {};
  return Object.keys(tags).length > 0 ? { Tags: tags } : {};
}

function requireMember(call: SqsCall, name: string): void {
  if (call.input[name] === undefined || call.input[name] === null) throw missingParameter(name);
}

function checkTags(tags: Record<string, string>): Record<string, string> {
  const entries = Object.entries(tags);
  if (entries.length > MAX_TAGS) {
    throw invalidParameter(
      'Tags',
      `${entries.length} tags`,
      `A queue has at most ${MAX_TAGS} tags.`,
    );
  }
  for (const [key, value] of entries) {
    if (key.length < 1 || key.length > 128 || value.length > 256) {
      throw invalidParameter(
        'Tags',
        key,
        'Tag keys are 1 to 128 characters and tag values at most 256.',
      );
    }
  }
  return tags;
}

/** Ready, delayed and in-flight messages go at once (R19); leaseq's own dead set stays. */
async function purgeQueue(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'admin');
  const removed = await queue.purgeQueue();
  call.log.info({ queue: queue.name, removed }, 'purged through SQS');
  return {};
}

/**
 * A RedrivePolicy must name a queue that exists, of the source's type: a FIFO queue's
 * dead-letter queue is FIFO, a standard queue's standard (SQS checks the same).
 */
async function checkRedriveTarget(
  call: SqsCall,
  sqs: SqsServices,
  change: AttributeChange,
  fifo: boolean,
): Promise<void> {
  const target = change.redriveTarget;
  if (target === undefined || target === null) return;
  // Dead messages are sent to the target: a key that may not send there may not aim them there.
  authorizeQueue(call, target, 'publish');
  if (!(await sqs.services.broker.listQueues()).some((info) => info.name === target)) {
    throw invalidParameter(
      'RedrivePolicy',
      queueArn(sqs, target),
      'Dead letter target does not exist.',
    );
  }
  if (isFifo(await sqs.catalog.get(target)) !== fifo) {
    throw invalidParameter(
      'RedrivePolicy',
      queueArn(sqs, target),
      'Dead-letter queue must be same type of queue as the source.',
    );
  }
}

async function permissionAction(call: SqsCall): Promise<never> {
  throw new SqsError(
    'UnsupportedOperation',
    `${call.action} is not supported: leaseq grants rights with API keys (see docs/operations.md), not queue policies.`,
  );
}

export const QUEUE_ACTIONS: ActionTable = {
  CreateQueue: createQueue,
  GetQueueUrl: getQueueUrl,
  ListQueues: listQueues,
  DeleteQueue: deleteQueue,
  GetQueueAttributes: getQueueAttributes,
  SetQueueAttributes: setQueueAttributes,
  TagQueue: tagQueue,
  UntagQueue: untagQueue,
  ListQueueTags: listQueueTags,
  PurgeQueue: purgeQueue,
  AddPermission: permissionAction,
  RemovePermission: permissionAction,
};
