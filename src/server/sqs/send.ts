import { randomUUID } from 'node:crypto';
import type { PublishInput } from '../../core/index.js';
import type { Limits } from '../limits.js';
import { storedAttribute } from './attributes.js';
import type { QueueMeta } from './catalog.js';
import { toEnvelope } from './envelope.js';
import { invalidParameter, missingParameter, SqsError } from './errors.js';
import { checkFifoId, contentDeduplicationId, fifoMessageId, isFifo } from './fifo.js';
import { type MessageAttribute, md5OfBody, md5OfMessageAttributes } from './md5.js';
import { checkCharacters, messageSize, parseMessageAttributes } from './message-attributes.js';
import { optionalInteger, optionalString, recordMap, type SqsInput } from './params.js';
import { checkMessageWithin, checkSecondsWithin } from './server-limits.js';

/** One message of a send, checked and ready to publish, with the digests its answer carries. */
export interface PreparedSend {
  publish: PublishInput & { id: string };
  /**
   * The MessageId the send answers unless it is a duplicate: a standard message's is its job
   * id, a FIFO message's a random UUID kept in its envelope (its job id names its
   * de-duplication id, see `fifoMessageId`).
   */
  messageId: string;
  /** A FIFO queue's: the answer carries a SequenceNumber. */
  fifo: boolean;
  /**
   * A FIFO queue's: what its job id is derived from (`publish.id` is generation 0's; the send
   * may take a later one, see `resolveFifoSend`).
   */
  fifoKey?: FifoKey;
  size: number;
  answer: {
    MD5OfMessageBody: string;
    MD5OfMessageAttributes?: string;
    MD5OfMessageSystemAttributes?: string;
  };
}

/** What a FIFO message's job ids are derived from (`fifoMessageId`). */
export interface FifoKey {
  scope: 'queue' | 'messageGroup';
  groupId: string;
  deduplicationId: string;
  /** The queue's `fifoIdKey`, when it has one. */
  queueKey?: string;
}

/** Checks one SendMessage (or batch entry) against the queue's attributes. */
export function prepareSend(
  input: SqsInput,
  meta: QueueMeta | undefined,
  senderId: string,
  now: number,
  limits: Limits,
  /** The request's X-Amzn-Trace-Id: the AWSTraceHeader of a message that names none itself. */
  requestTrace?: string,
): PreparedSend {
  const body = input.MessageBody;
  if (body === undefined || body === null || body === '') throw missingParameter('MessageBody');
  if (typeof body !== 'string') throw invalidParameter('MessageBody', body, 'Must be a string.');
  checkCharacters(body, 'the message body');
  const fifo = isFifo(meta);
  const delaySeconds = delayOf(input, meta, fifo);
  checkSecondsWithin(limits, 'delay', 'DelaySeconds', delaySeconds);
  const attributes = parseMessageAttributes(recordMap(input, 'MessageAttributes'));
  const ownTrace = parseSystemAttributes(recordMap(input, 'MessageSystemAttributes'));
  // The message's own AWSTraceHeader comes before the request's header, as in SQS.
  const traceHeader = ownTrace ?? requestTrace;
  const { groupId, deduplicationId, id, fifoKey } = fifo
    ? fifoIdentity(input, body, meta)
    : standardIdentity(input);
  // Each FIFO message is a message of its own to SQS clients, whatever its job id.
  const messageId = fifo ? randomUUID() : id;
  const maxSize = Number(storedAttribute(meta, 'MaximumMessageSize'));
  const size = messageSize(body, attributes);
  if (size > maxSize) {
    throw invalidParameter(
      'MessageBody',
      `${size} bytes`,
      `Message must be shorter than ${maxSize} bytes.`,
    );
  }
  checkMessageWithin(limits, size);
  const envelope = toEnvelope({
    body,
    attributes,
    sentTimestamp: now,
    senderId,
    ...(traceHeader === undefined ? {} : { traceHeader }),
    ...(groupId === undefined ? {} : { groupId }),
    ...(deduplicationId === undefined ? {} : { deduplicationId }),
    ...(fifo ? { messageId } : {}),
  });
  const attributesMd5 = md5OfMessageAttributes(attributes);
  // Of the system attributes the message itself sent, which a client can check.
  const systemMd5 =
    ownTrace === undefined
      ? undefined
      : md5OfMessageAttributes({
          AWSTraceHeader: { DataType: 'String', StringValue: ownTrace },
        });
  return {
    publish: {
      id,
      payload: envelope,
      delay: delaySeconds * 1000,
      // FIFO: the group is leaseq's (R24); a standard queue keeps it in the envelope only.
      ...(fifo && groupId !== undefined ? { group: groupId } : {}),
    },
    messageId,
    fifo,
    ...(fifoKey === undefined ? {} : { fifoKey }),
    size,
    answer: {
      MD5OfMessageBody: md5OfBody(body),
      ...(attributesMd5 === undefined ? {} : { MD5OfMessageAttributes: attributesMd5 }),
      ...(systemMd5 === undefined ? {} : { MD5OfMessageSystemAttributes: systemMd5 }),
    },
  };
}

/** The message's DelaySeconds, or the queue's; a FIFO queue takes the queue's only. */
function delayOf(input: SqsInput, meta: QueueMeta | undefined, fifo: boolean): number {
  const own = optionalInteger(input, 'DelaySeconds', 0, 900);
  const queueDelay = Number(storedAttribute(meta, 'DelaySeconds') ?? 0);
  if (!fifo) return own ?? queueDelay;
  if (own !== undefined && own !== 0) {
    throw invalidParameter(
      'DelaySeconds',
      own,
      'The request include parameter that is not valid for this queue type.',
    );
  }
  // 0 says nothing, and SQS takes it: the queue's delay still applies.
  return queueDelay;
}

interface Identity {
  id: string;
  groupId: string | undefined;
  deduplicationId: string | undefined;
  fifoKey?: FifoKey;
}

/**
 * A standard queue's message: a random MessageId; a MessageGroupId is kept and returned (SQS
 * fair queues), a MessageDeduplicationId refused.
 */
function standardIdentity(input: SqsInput): Identity {
  if (input.MessageDeduplicationId !== undefined && input.MessageDeduplicationId !== null) {
    throw invalidParameter(
      'MessageDeduplicationId',
      input.MessageDeduplicationId,
      'The request includes a parameter that is not valid for this queue type.',
    );
  }
  const groupId = optionalString(input, 'MessageGroupId');
  return {
    id: randomUUID(),
    groupId: groupId === undefined ? undefined : checkFifoId('MessageGroupId', groupId),
    deduplicationId: undefined,
  };
}

/**
 * A FIFO queue's message: a MessageGroupId, a MessageDeduplicationId (given, or the SHA-256 of
 * the body with ContentBasedDeduplication), and the job id the de-duplication id names in its
 * first generation.
 */
function fifoIdentity(input: SqsInput, body: string, meta: QueueMeta | undefined): Identity {
  const groupId = optionalString(input, 'MessageGroupId');
  if (groupId === undefined || groupId === '') throw missingParameter('MessageGroupId');
  checkFifoId('MessageGroupId', groupId);
  const given = optionalString(input, 'MessageDeduplicationId');
  let deduplicationId: string;
  // An empty one is given, and invalid (1 to 128 characters), as SQS answers it: not absent,
  // so ContentBasedDeduplication does not stand in for it.
  if (given !== undefined) {
    deduplicationId = checkFifoId('MessageDeduplicationId', given);
  } else if (storedAttribute(meta, 'ContentBasedDeduplication') === 'true') {
    deduplicationId = contentDeduplicationId(body);
  } else {
    throw new SqsError(
      'InvalidParameterValue',
      'The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly',
    );
  }
  const scope =
    storedAttribute(meta, 'DeduplicationScope') === 'messageGroup' ? 'messageGroup' : 'queue';
  const queueKey = typeof meta?.fifoIdKey === 'string' ? meta.fifoIdKey : undefined;
  return {
    id: fifoMessageId(scope, groupId, deduplicationId, 0, queueKey),
    groupId,
    deduplicationId,
    fifoKey: { scope, groupId, deduplicationId, ...(queueKey === undefined ? {} : { queueKey }) },
  };
}

/** AWSTraceHeader is the one system attribute a sender may set. */
function parseSystemAttributes(raw: Record<string, SqsInput>): string | undefined {
  const parsed: Record<string, MessageAttribute> = parseMessageAttributes(
    raw,
    'MessageSystemAttributes',
  );
  for (const name of Object.keys(parsed)) {
    if (name !== 'AWSTraceHeader') {
      throw new SqsError(
        'InvalidParameterValue',
        `Message system attribute name '${name}' is invalid: only AWSTraceHeader can be sent.`,
      );
    }
  }
  const trace = parsed.AWSTraceHeader;
  if (trace !== undefined && trace.DataType !== 'String') {
    throw new SqsError('InvalidParameterValue', 'AWSTraceHeader must be of DataType String.');
  }
  return trace?.StringValue;
}
