import { type PublishResult, QueueFullError } from '../../../core/index.js';
import { resolveQueue, type SqsCall, type SqsServices } from '../context.js';
import { SqsError, toSqsError } from '../errors.js';
import { sequenceNumber } from '../fifo.js';
import { batchEntries } from '../params.js';
import { type PreparedSend, prepareSend } from '../send.js';
import type { ActionTable, FailedEntry } from './action.js';

/** SQS's bound on the sum of a batch's message sizes. */
const MAX_BATCH_BYTES = 1_048_576;

async function sendMessage(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'publish');
  const meta = await sqs.catalog.get(queue.name);
  const prepared = prepareSend(
    call.input,
    meta,
    call.principal.name,
    Date.now(),
    sqs.services.limits,
  );
  const result = await queue.publish(prepared.publish);
  logDuplicate(call, queue.name, result);
  return answer(prepared, result);
}

/**
 * What a send answers: the MessageId (a FIFO duplicate's is the original's, R4) and, on a FIFO
 * queue, the SequenceNumber (R29: a duplicate's is the original's too). The digests are of what
 * was sent, as the SDKs check.
 */
function answer(prepared: PreparedSend, result: PublishResult | undefined) {
  const groupSeq = prepared.fifo ? result?.groupSeq : undefined;
  return {
    MessageId: result?.id ?? prepared.publish.id,
    ...prepared.answer,
    ...(groupSeq === undefined ? {} : { SequenceNumber: sequenceNumber(groupSeq) }),
  };
}

function logDuplicate(call: SqsCall, queue: string, result: PublishResult): void {
  if (result.duplicate) call.log.info({ queue, jobId: result.id }, 'duplicate send: not enqueued');
}

/**
 * Entries that fail their checks fail alone; the others are published all-or-nothing (R5), so
 * a queue too full for them (R31) fails each of them.
 */
async function sendMessageBatch(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'publish');
  const entries = batchEntries(call.input, 'Entries');
  const meta = await sqs.catalog.get(queue.name);
  const now = Date.now();
  const accepted: { id: string; prepared: PreparedSend }[] = [];
  const failed: FailedEntry[] = [];
  for (const entry of entries) {
    try {
      accepted.push({
        id: entry.Id,
        prepared: prepareSend(entry, meta, call.principal.name, now, sqs.services.limits),
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
  let results: PublishResult[] = [];
  try {
    if (accepted.length > 0) {
      results = await queue.publishBatch(accepted.map((item) => item.prepared.publish));
    }
  } catch (error) {
    if (!(error instanceof QueueFullError)) throw error;
    // All or nothing (R5, R31): none of them was stored, so each entry fails with it.
    return {
      Successful: [],
      Failed: [...failed, ...accepted.map((item) => failedEntry(item.id, error))],
    };
  }
  for (const result of results) logDuplicate(call, queue.name, result);
  return {
    Successful: accepted.map((item, index) => ({
      Id: item.id,
      ...answer(item.prepared, results[index]),
    })),
    Failed: failed,
  };
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
