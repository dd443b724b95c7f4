import type { MessageAttribute } from './md5.js';
import { attributesFromStore, attributesToWire } from './message-attributes.js';
import { isRecord } from './params.js';

/**
 * What an SQS message stores as its leaseq payload. A leaseq worker reads `payload.body` (the
 * SQS body, a string) and finds the rest under `payload.sqs`.
 */
export interface SqsEnvelope {
  body: string;
  sqs: {
    /** Epoch ms of the send. */
    sentTimestamp: number;
    /** The key name that sent it (`anonymous` without keys). */
    senderId: string;
    /** Message attributes; binary values as base64. */
    attributes?: Record<string, { DataType: string; StringValue?: string; BinaryValue?: string }>;
    /** The AWSTraceHeader system attribute. */
    traceHeader?: string;
    /** MessageGroupId: on a FIFO queue also the job's group (R24); on a standard one kept only. */
    groupId?: string;
    /** A FIFO queue's MessageDeduplicationId (given, or the SHA-256 of the body). */
    deduplicationId?: string;
    /**
     * A FIFO queue's MessageId: a random UUID of its own. The job id names the de-duplication
     * id (`fifoMessageId`), the same for every later message of that id.
     */
    messageId?: string;
  };
}

/** An SQS message's content, from an envelope or from any other leaseq payload. */
export interface MessageContent {
  body: string;
  attributes: Record<string, MessageAttribute>;
  sentTimestamp?: number;
  senderId?: string;
  traceHeader?: string;
  groupId?: string;
  deduplicationId?: string;
  /** What a FIFO send stores; read back only through `messageIdOf`, which checks the job id. */
  messageId?: string;
}

export function toEnvelope(
  content: MessageContent & { sentTimestamp: number; senderId: string },
): SqsEnvelope {
  const attributes = attributesToWire(content.attributes);
  return {
    body: content.body,
    sqs: {
      sentTimestamp: content.sentTimestamp,
      senderId: content.senderId,
      ...(Object.keys(attributes).length > 0 ? { attributes } : {}),
      ...(content.traceHeader === undefined ? {} : { traceHeader: content.traceHeader }),
      ...(content.groupId === undefined ? {} : { groupId: content.groupId }),
      ...(content.deduplicationId === undefined
        ? {}
        : { deduplicationId: content.deduplicationId }),
      ...(content.messageId === undefined ? {} : { messageId: content.messageId }),
    },
  };
}

/**
 * Reads a payload as an SQS message. A payload published another way (/v1, the worker) is
 * its body: a string as it is, anything else as JSON text. A body with a character SQS never
 * carries (see carriedBody) is received as JSON text too.
 */
export function fromPayload(payload: unknown): MessageContent {
  if (isEnvelope(payload)) {
    const { sqs } = payload;
    return {
      body: carriedBody(payload.body),
      attributes: attributesFromStore(sqs.attributes),
      sentTimestamp: sqs.sentTimestamp,
      senderId: sqs.senderId,
      ...(typeof sqs.traceHeader === 'string' ? { traceHeader: sqs.traceHeader } : {}),
      ...(typeof sqs.groupId === 'string' ? { groupId: sqs.groupId } : {}),
      ...(typeof sqs.deduplicationId === 'string' ? { deduplicationId: sqs.deduplicationId } : {}),
    };
  }
  const body = typeof payload === 'string' ? payload : (JSON.stringify(payload) ?? 'null');
  return { body: carriedBody(body), attributes: {} };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The form of a FIFO message's job id: a name-based UUID, version 8 (`fifoMessageId`). */
const FIFO_JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * The MessageId of a message stored as job `id` with `payload`: the one its envelope holds when
 * the job is a FIFO send's (its job id derived, `fifoMessageId`), else the job id — a standard
 * send's random one, or a job published through /v1, whatever its payload holds: a worker that
 * passes an SQS message's payload on publishes a message of its own, which must not be received
 * with the MessageId of the message it copied.
 */
export function messageIdOf(id: string, payload: unknown): string {
  return (FIFO_JOB_ID.test(id) ? envelopeMessageId(payload) : undefined) ?? id;
}

/** The envelope's MessageId, if it holds one of UUID form (a /v1 payload may hold anything). */
function envelopeMessageId(payload: unknown): string | undefined {
  if (!isEnvelope(payload)) return undefined;
  const { messageId } = payload.sqs;
  return typeof messageId === 'string' && UUID.test(messageId) ? messageId : undefined;
}

/** What SQS refuses in a body: anything outside #x9 #xA #xD #x20–#xD7FF #xE000–#xFFFD #x10000–. */
const NOT_SQS_TEXT = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/**
 * A body every SQS client can read. A job published through /v1 or in-process may hold text SQS
 * never delivers (a control character, U+FFFE): the query protocol's XML cannot carry it, and a
 * strict parser would then fail on every answer holding that message. Such a body goes as JSON
 * text, its characters escaped (`"a\u0001b"`), on both protocols alike, and MD5OfBody is the
 * MD5 of that text.
 */
function carriedBody(body: string): string {
  if (!NOT_SQS_TEXT.test(body)) return body;
  // JSON.stringify escapes controls and lone surrogates; U+FFFE and U+FFFF it leaves as they are.
  return JSON.stringify(body).replace(
    /[\uFFFE\uFFFF]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16)}`,
  );
}

function isEnvelope(payload: unknown): payload is SqsEnvelope {
  return (
    isRecord(payload) &&
    typeof payload.body === 'string' &&
    isRecord(payload.sqs) &&
    typeof payload.sqs.sentTimestamp === 'number' &&
    typeof payload.sqs.senderId === 'string'
  );
}
