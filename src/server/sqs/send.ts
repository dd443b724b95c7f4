import { randomUUID } from 'node:crypto';
import type { PublishInput } from '../../core/index.js';
import { storedAttribute } from './attributes.js';
import type { QueueMeta } from './catalog.js';
import { toEnvelope } from './envelope.js';
import { invalidParameter, missingParameter, SqsError } from './errors.js';
import { type MessageAttribute, md5OfBody, md5OfMessageAttributes } from './md5.js';
import { checkCharacters, messageSize, parseMessageAttributes } from './message-attributes.js';
import { optionalInteger, optionalString, recordMap, type SqsInput } from './params.js';

/** One message of a send, checked and ready to publish, with the digests its answer carries. */
export interface PreparedSend {
  publish: PublishInput & { id: string };
  size: number;
  answer: {
    MD5OfMessageBody: string;
    MD5OfMessageAttributes?: string;
    MD5OfMessageSystemAttributes?: string;
  };
}

/** Checks one SendMessage (or batch entry) against the queue's attributes. */
export function prepareSend(
  input: SqsInput,
  meta: QueueMeta | undefined,
  senderId: string,
  now: number,
): PreparedSend {
  const body = input.MessageBody;
  if (body === undefined || body === null || body === '') throw missingParameter('MessageBody');
  if (typeof body !== 'string') throw invalidParameter('MessageBody', body, 'Must be a string.');
  checkCharacters(body, 'the message body');
  const defaultDelay = Number(storedAttribute(meta, 'DelaySeconds') ?? 0);
  const delaySeconds = optionalInteger(input, 'DelaySeconds', 0, 900) ?? defaultDelay;
  const attributes = parseMessageAttributes(recordMap(input, 'MessageAttributes'));
  const traceHeader = parseSystemAttributes(recordMap(input, 'MessageSystemAttributes'));
  if (input.MessageDeduplicationId !== undefined) {
    throw invalidParameter(
      'MessageDeduplicationId',
      input.MessageDeduplicationId,
      'The request includes a parameter that is not valid for this queue type.',
    );
  }
  const groupId = optionalString(input, 'MessageGroupId');
  const maxSize = Number(storedAttribute(meta, 'MaximumMessageSize'));
  const size = messageSize(body, attributes);
  if (size > maxSize) {
    throw invalidParameter(
      'MessageBody',
      `${size} bytes`,
      `Message must be shorter than ${maxSize} bytes.`,
    );
  }
  const envelope = toEnvelope({
    body,
    attributes,
    sentTimestamp: now,
    senderId,
    ...(traceHeader === undefined ? {} : { traceHeader }),
    ...(groupId === undefined ? {} : { groupId }),
  });
  const attributesMd5 = md5OfMessageAttributes(attributes);
  const systemMd5 =
    traceHeader === undefined
      ? undefined
      : md5OfMessageAttributes({
          AWSTraceHeader: { DataType: 'String', StringValue: traceHeader },
        });
  return {
    publish: { id: randomUUID(), payload: envelope, delay: delaySeconds * 1000 },
    size,
    answer: {
      MD5OfMessageBody: md5OfBody(body),
      ...(attributesMd5 === undefined ? {} : { MD5OfMessageAttributes: attributesMd5 }),
      ...(systemMd5 === undefined ? {} : { MD5OfMessageSystemAttributes: systemMd5 }),
    },
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
