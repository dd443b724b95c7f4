import type { Queue } from '../../../broker/index.js';
import { build, type Delivery, type JobView } from '../../../core/index.js';
import { leaseOf } from '../../limits.js';
import { MAX_VISIBILITY_SECONDS, storedAttribute } from '../attributes.js';
import { queueArn, resolveQueue, type SqsCall, type SqsServices } from '../context.js';
import { fromPayload, type MessageContent, messageIdOf } from '../envelope.js';
import { invalidParameter, SqsError } from '../errors.js';
import { checkFifoId, isFifo, sequenceNumber } from '../fifo.js';
import { md5OfBody, md5OfMessageAttributes } from '../md5.js';
import { attributesToWire } from '../message-attributes.js';
import { optionalInteger, optionalString, stringList } from '../params.js';
import { checkSecondsWithin } from '../server-limits.js';
import type { ActionTable } from './action.js';

const SYSTEM_ATTRIBUTES = [
  'SenderId',
  'SentTimestamp',
  'ApproximateReceiveCount',
  'ApproximateFirstReceiveTimestamp',
  'MessageGroupId',
  'MessageDeduplicationId',
  'SequenceNumber',
  'AWSTraceHeader',
  'DeadLetterQueueSourceArn',
] as const;
/** leaseq's own: the delivery's fencing token (R7). Only when named; `All` is SQS's set. */
const FENCING_TOKEN = 'LeaseqFencingToken';
type SystemAttribute = (typeof SYSTEM_ATTRIBUTES)[number] | typeof FENCING_TOKEN;

interface ReceiveRequest {
  max: number;
  visibilityMs: number | undefined;
  waitMs: number;
  system: ReadonlySet<SystemAttribute>;
  messageAttributeNames: readonly string[];
  /** A FIFO queue's messages carry a SequenceNumber. */
  fifo: boolean;
}

async function receiveMessage(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'consume');
  const request = await parseReceive(call, sqs, queue);
  const leave = request.waitMs > 0 ? sqs.services.longPolls.enter() : undefined;
  let deliveries: Delivery[];
  try {
    deliveries = await queue.receive({
      max: request.max,
      ...(request.visibilityMs === undefined ? {} : { visibility: request.visibilityMs }),
      wait: request.waitMs,
      signal: call.signal,
    });
  } finally {
    leave?.();
  }
  if (call.clientGone()) {
    // Nobody will see these: give them back rather than hide them for a whole lease.
    await queue.execute(build.giveBack(deliveries.map((delivery) => delivery.token)));
    return {};
  }
  // The lease the deliveries got (R6): the visibility asked for or the queue's, cut to the
  // queue's maxLease. Read once, and only when an answer needs it.
  let lease: Promise<number> | undefined;
  const leaseMs = () => {
    lease ??= queue
      .options()
      .then((options) => Math.min(request.visibilityMs ?? options.visibility, options.maxLease));
    return lease;
  };
  const messages = [];
  for (const delivery of deliveries) {
    call.log.info(
      { queue: queue.name, jobId: delivery.id, token: delivery.token, via: 'sqs' },
      'delivered',
    );
    messages.push(await toMessage(sqs, queue, delivery, leaseMs, request));
  }
  return messages.length > 0 ? { Messages: messages } : {};
}

async function parseReceive(
  call: SqsCall,
  sqs: SqsServices,
  queue: Queue,
): Promise<ReceiveRequest> {
  const { input } = call;
  const meta = await sqs.catalog.get(queue.name);
  const max = optionalInteger(input, 'MaxNumberOfMessages', 1, 10) ?? 1;
  const { limits } = sqs.services;
  const visibility = optionalInteger(input, 'VisibilityTimeout', 0, MAX_VISIBILITY_SECONDS);
  if (visibility !== undefined) {
    checkSecondsWithin(limits, 'visibility', 'VisibilityTimeout', visibility);
  } else {
    // The queue's lease, held to the same limit (and read as seldom) as by a receive of the
    // HTTP API that names none.
    const queueSeconds = (await leaseOf(queue)) / 1000;
    if (queueSeconds * 1000 > limits.maxVisibilityMs) {
      throw invalidParameter(
        'VisibilityTimeout',
        queueSeconds,
        `the queue's VisibilityTimeout is above this server's maxVisibilityMs of ${limits.maxVisibilityMs}: name a VisibilityTimeout of at most ${Math.floor(limits.maxVisibilityMs / 1000)}, or lower the queue's.`,
      );
    }
  }
  const askedWait = optionalInteger(input, 'WaitTimeSeconds', 0, 20);
  if (askedWait !== undefined) checkSecondsWithin(limits, 'wait', 'WaitTimeSeconds', askedWait);
  // The queue's default, set within the limit, is cut to it if the limit was lowered since.
  const waitSeconds = askedWait ?? Number(storedAttribute(meta, 'ReceiveMessageWaitTimeSeconds'));
  // Checked, then ignored: a retried receive gets what is visible then, as any receive (R24
  // keeps a group's messages in order whatever it answers).
  const attemptId = optionalString(input, 'ReceiveRequestAttemptId');
  if (attemptId !== undefined) checkFifoId('ReceiveRequestAttemptId', attemptId);
  const names = [
    ...stringList(input, 'AttributeNames'),
    ...stringList(input, 'MessageSystemAttributeNames'),
  ];
  for (const name of names) {
    const known = name === 'All' || name === FENCING_TOKEN;
    if (!known && !(SYSTEM_ATTRIBUTES as readonly string[]).includes(name)) {
      throw new SqsError('InvalidAttributeName', `Unknown Attribute ${name}.`);
    }
  }
  const system = new Set<SystemAttribute>(names as SystemAttribute[]);
  if (system.has('All' as SystemAttribute)) for (const name of SYSTEM_ATTRIBUTES) system.add(name);
  return {
    max,
    // A VisibilityTimeout of 0 is a 1 ms lease: visible again at once, its handle then stale.
    visibilityMs: visibility === undefined ? undefined : Math.max(1, visibility * 1000),
    waitMs: Math.min(waitSeconds * 1000, sqs.services.limits.maxWaitMs),
    system,
    messageAttributeNames: stringList(input, 'MessageAttributeNames'),
    fifo: isFifo(meta),
  };
}

async function toMessage(
  sqs: SqsServices,
  queue: Queue,
  delivery: Delivery,
  leaseMs: () => Promise<number>,
  request: ReceiveRequest,
) {
  const content = fromPayload(delivery.payload);
  const chosen = Object.fromEntries(
    Object.entries(content.attributes).filter(([name]) =>
      wantsAttribute(request.messageAttributeNames, name),
    ),
  );
  const attributesMd5 = md5OfMessageAttributes(chosen);
  const system = await systemAttributes(sqs, queue, delivery, leaseMs, content, request);
  return {
    // A FIFO message's own (its job id names its de-duplication id); else the job id.
    MessageId: messageIdOf(delivery.id, delivery.payload),
    ReceiptHandle: sqs.services.receipts.issue(queue.name, delivery.token, delivery.id),
    MD5OfBody: md5OfBody(content.body),
    Body: content.body,
    ...(Object.keys(system).length > 0 ? { Attributes: system } : {}),
    ...(attributesMd5 === undefined
      ? {}
      : { MD5OfMessageAttributes: attributesMd5, MessageAttributes: attributesToWire(chosen) }),
  };
}

/** `All` and `.*` name every attribute, `prefix.*` those under the prefix, else exact names. */
function wantsAttribute(patterns: readonly string[], name: string): boolean {
  return patterns.some(
    (pattern) =>
      pattern === 'All' ||
      pattern === '.*' ||
      pattern === name ||
      (pattern.endsWith('.*') && name.startsWith(pattern.slice(0, -1))),
  );
}

async function systemAttributes(
  sqs: SqsServices,
  queue: Queue,
  delivery: Delivery,
  leaseMs: () => Promise<number>,
  content: MessageContent,
  request: ReceiveRequest,
): Promise<Record<string, string>> {
  const wanted = request.system;
  // The job's stored view, read once and only when an answer needs it.
  let view: Promise<JobView | undefined> | undefined;
  const job = () => {
    view ??= queue.job(delivery.id);
    return view;
  };
  const values: Partial<Record<SystemAttribute, string | undefined>> = {
    SenderId: content.senderId,
    SentTimestamp: content.sentTimestamp?.toString(),
    ApproximateReceiveCount: String(delivery.deliveryCount),
    // A job published through /v1 with a group has it in the delivery, not in an envelope.
    MessageGroupId: content.groupId ?? delivery.group,
    MessageDeduplicationId: content.deduplicationId,
    AWSTraceHeader: content.traceHeader,
    LeaseqFencingToken: String(delivery.token),
  };
  if (wanted.has('SentTimestamp') && values.SentTimestamp === undefined) {
    // Published through /v1 or in-process: the engine's publish time, where it kept one.
    values.SentTimestamp = (await job())?.publishedAt?.toString();
  }
  if (wanted.has('ApproximateFirstReceiveTimestamp')) {
    const first = await firstReceive(delivery, leaseMs, await job());
    values.ApproximateFirstReceiveTimestamp = String(first);
  }
  if (wanted.has('SequenceNumber') && request.fifo) {
    // The job's group sequence number (R29): the send answered the same one.
    const groupSeq = (await job())?.groupSeq;
    values.SequenceNumber = groupSeq === undefined ? undefined : sequenceNumber(groupSeq);
  }
  if (wanted.has('DeadLetterQueueSourceArn')) {
    // Set on messages that came by dead-lettering (R26): the queue they died in.
    const origin = (await job())?.origin;
    values.DeadLetterQueueSourceArn =
      origin === undefined ? undefined : queueArn(sqs, origin.queue);
  }
  const result: Record<string, string> = {};
  for (const name of wanted) {
    const value = values[name];
    if (value !== undefined) result[name] = value;
  }
  return result;
}

/**
 * ApproximateFirstReceiveTimestamp: one value per message, its first receive anywhere (as SQS
 * gives), whatever queue it is in now. Not `deliveryCount`, which starts again in a dead-letter
 * queue and at a redrive: the job's attempt history, which it keeps across those (R14, R26) and
 * which always keeps its first attempt, begins with its first delivery. A message with no
 * attempt recorded yet is at its first receive: this one, which began at its deadline − its
 * lease (its attempt will say the same time).
 */
async function firstReceive(
  delivery: Delivery,
  leaseMs: () => Promise<number>,
  view: JobView | undefined,
): Promise<number> {
  return view?.history[0]?.deliveredAt ?? delivery.deadline - (await leaseMs());
}

export const RECEIVE_ACTIONS: ActionTable = { ReceiveMessage: receiveMessage };
