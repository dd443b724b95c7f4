import type { Queue } from '../../../broker/index.js';
import { type PublishResult, QueueFullError } from '../../../core/index.js';
import { resolveQueue, type SqsCall, type SqsServices } from '../context.js';
import { SqsError, toSqsError } from '../errors.js';
import { sequenceNumber } from '../fifo.js';
import {
  dedupPlace,
  duplicateMessageId,
  type ResolvedSend,
  resolveFifoSend,
} from '../fifo-dedup.js';
import { refuseListValues } from '../message-attributes.js';
import { batchEntries } from '../params.js';
import { type PreparedSend, prepareSend } from '../send.js';
import type { ActionTable, FailedEntry } from './action.js';

/** SQS's bound on the sum of a batch's message sizes. */
const MAX_BATCH_BYTES = 1_048_576;

async function sendMessage(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'publish');
  refuseListValues(call.input, 'SendMessage');
  const meta = await sqs.catalog.get(queue.name);
  const prepared = prepareSend(
    call.input,
    meta,
    call.principal.name,
    Date.now(),
    sqs.services.limits,
    call.traceHeader,
  );
  // A FIFO send takes the first free job id of its de-duplication id, or is a duplicate.
  const resolved = await resolveFifoSend(await dedupPlace(sqs, queue, meta), prepared);
  if (resolved.duplicate !== undefined) {
    logDuplicate(call, queue.name, resolved.duplicate);
    return answer(prepared, resolved.duplicate, resolved.duplicate.messageId);
  }
  const result = await queue.publish(resolved.publish);
  logDuplicate(call, queue.name, result);
  return answer(prepared, result, await messageIdOfSend(queue, prepared, result));
}

/**
 * The MessageId a send answers: its own, or, when the publish found its job id there (R4: sent
 * meanwhile, or earlier in the batch), the MessageId of the message it is a duplicate of.
 */
function messageIdOfSend(
  queue: Queue,
  prepared: PreparedSend,
  result: PublishResult,
): string | Promise<string> {
  if (!result.duplicate) return prepared.messageId;
  return prepared.fifo ? duplicateMessageId(queue, result) : result.id;
}

/**
 * What a send answers: the MessageId (a FIFO duplicate's is the original's, R4) and, on a FIFO
 * queue, the SequenceNumber (R29: a duplicate's is the original's too). The digests are of what
 * was sent, as the SDKs check.
 */
function answer(prepared: PreparedSend, result: PublishResult, messageId: string) {
  const groupSeq = prepared.fifo ? result.groupSeq : undefined;
  return {
    MessageId: messageId,
    ...prepared.answer,
    ...(groupSeq === undefined ? {} : { SequenceNumber: sequenceNumber(groupSeq) }),
  };
}

function logDuplicate(call: SqsCall, queue: string, result: PublishResult): void {
  if (result.duplicate) call.log.info({ queue, jobId: result.id }, 'duplicate send: not enqueued');
}

/**
 * Entries that fail their checks fail alone; each FIFO entry then takes its MessageId (or is a
 * duplicate, not published), and the others are published all-or-nothing (R5), so a queue too
 * full for them (R31) fails each of them.
 */
async function sendMessageBatch(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'publish');
  const entries = batchEntries(call.input, 'Entries');
  // Refused for the whole request, as SQS does, not entry by entry.
  for (const entry of entries) refuseListValues(entry, 'SendMessageBatch');
  const meta = await sqs.catalog.get(queue.name);
  const now = Date.now();
  const accepted: { id: string; prepared: PreparedSend }[] = [];
  const failed: FailedEntry[] = [];
  for (const entry of entries) {
    try {
      accepted.push({
        id: entry.Id,
        prepared: prepareSend(
          entry,
          meta,
          call.principal.name,
          now,
          sqs.services.limits,
          call.traceHeader,
        ),
      });
    } catch (error) {
      failed.push(failedEntry(entry.Id, error));
    }
  }
  const total = accepted.reduce((sum, item) => sum + item.prepared.size, 0);
  if (total > MAX_BATCH_BYTES) {
    throw new SqsError(
      'BatchRequestTooLong',
      `Batch requests cannot be longer than ${MAX_BATCH_BYTES} bytes. You have sent ${total} bytes.`,
    );
  }
  const place = await dedupPlace(sqs, queue, meta);
  const resolved = await Promise.all(accepted.map((item) => resolveFifoSend(place, item.prepared)));
  // Entries of one de-duplication id in the batch take the same job id: the publish answers
  // the later ones as duplicates of the first (R4), and they answer its MessageId.
  const publishes = resolved.flatMap((each) => (each.publish === undefined ? [] : [each.publish]));
  let published: PublishResult[] = [];
  try {
    if (publishes.length > 0) published = await queue.publishBatch(publishes);
  } catch (error) {
    if (!(error instanceof QueueFullError)) throw error;
    // All or nothing (R5, R31): none of them was stored, so each entry to publish fails with
    // it; a duplicate needed no room.
    return {
      Successful: accepted.flatMap((item, index) => {
        const duplicate = resolved[index]?.duplicate;
        return duplicate === undefined
          ? []
          : [{ Id: item.id, ...answer(item.prepared, duplicate, duplicate.messageId) }];
      }),
      Failed: [
        ...failed,
        ...accepted
          .filter((_item, index) => resolved[index]?.publish !== undefined)
          .map((item) => failedEntry(item.id, error)),
      ],
    };
  }
  let next = 0;
  const successful = [];
  for (const [index, item] of accepted.entries()) {
    const each = resolved[index] as ResolvedSend;
    const result = each.duplicate ?? (published[next++] as PublishResult);
    logDuplicate(call, queue.name, result);
    const messageId =
      each.duplicate?.messageId ?? (await messageIdOfSend(queue, item.prepared, result));
    successful.push({ Id: item.id, ...answer(item.prepared, result, messageId) });
  }
  return { Successful: successful, Failed: failed };
}

/** A batch entry's own failure; a failure of the server itself fails the whole request. */
export function failedEntry(id: string, error: unknown): FailedEntry {
  const { error: sqsError, internal } = toSqsError(error);
  if (internal) throw error;
  return { Id: id, SenderFault: true, Code: sqsError.legacyCode, Message: sqsError.message };
}

export const SEND_ACTIONS: ActionTable = {
  SendMessage: sendMessage,
  SendMessageBatch: sendMessageBatch,
};
