import type { Queue } from '../../../broker/index.js';
import type { JobView } from '../../../core/index.js';
import { nackFate } from '../../operation-runner.js';
import { MAX_VISIBILITY_SECONDS } from '../attributes.js';
import { resolveQueue, type SqsCall, type SqsServices } from '../context.js';
import { existingQueue, formerDeadLetterQueues, jobOf } from '../dead-letter-history.js';
import { invalidParameter, missingParameter, SqsError } from '../errors.js';
import { isFifo } from '../fifo.js';
import { batchEntries, requiredInteger, type SqsInput } from '../params.js';
import { checkSecondsWithin } from '../server-limits.js';
import type { ActionTable, FailedEntry } from './action.js';
import { failedEntry } from './send-actions.js';

/** How far the broker's clock may be from this process's wall clock (a shared database's). */
const CLOCK_SLACK_MS = 1000;

interface Handle {
  text: string;
  token: number;
  id: string;
}

/** A receipt handle this server issued for this queue, or ReceiptHandleIsInvalid. */
function verifyHandle(sqs: SqsServices, queue: Queue, input: SqsInput): Handle {
  const text = input.ReceiptHandle;
  if (text === undefined || text === null || text === '') throw missingParameter('ReceiptHandle');
  try {
    if (typeof text !== 'string') throw new TypeError('not a string');
    return { text, ...sqs.services.receipts.verify(queue.name, text) };
  } catch (cause) {
    throw new SqsError(
      'ReceiptHandleIsInvalid',
      `The input receipt handle "${String(text).slice(0, 80)}" is not a valid receipt handle.`,
      { cause },
    );
  }
}

/**
 * The message a handle of this queue names, wherever it still is: in the queue, or moved from
 * this queue (the job keeps its id and records its origin there, R26) to its dead-letter
 * queue or to one it had before (replaced or removed by SetQueueAttributes meanwhile).
 */
async function findMessage(
  sqs: SqsServices,
  queue: Queue,
  id: string,
): Promise<JobView | undefined> {
  const here = await queue.job(id);
  if (here !== undefined) return here;
  const { deadLetterQueue } = await queue.options();
  const former = formerDeadLetterQueues(await sqs.catalog.get(queue.name), deadLetterQueue);
  for (const name of deadLetterQueue === undefined ? former : [deadLetterQueue, ...former]) {
    const place = await existingQueue(sqs, name);
    const dead = place === undefined ? undefined : await jobOf(place, id);
    if (dead?.origin?.queue === queue.name) return dead;
  }
  return undefined;
}

/**
 * A genuine handle whose delivery is over deleted nothing. While the message still exists (in
 * the queue or its dead-letter queue) that is an error (or, with staleReceipts ignore, SQS
 * standard queues' silent success; FIFO queues refuse an expired handle in SQS, so they always
 * do); once it is gone the delete is done, so a retry after a lost answer succeeds.
 */
async function staleDelete(call: SqsCall, sqs: SqsServices, queue: Queue, handle: Handle) {
  call.log.info({ queue: queue.name, jobId: handle.id, token: handle.token }, 'stale ack');
  if (sqs.settings.staleReceipts === 'ignore' && !isFifo(await sqs.catalog.get(queue.name))) {
    return;
  }
  if ((await findMessage(sqs, queue, handle.id)) === undefined) return;
  throw invalidParameter('ReceiptHandle', handle.text, 'The receipt handle has expired.');
}

async function deleteMessage(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'consume');
  const handle = verifyHandle(sqs, queue, call.input);
  if (await queue.ack(handle.token)) {
    call.log.info({ queue: queue.name, jobId: handle.id, token: handle.token }, 'acked');
  } else {
    await staleDelete(call, sqs, queue, handle);
  }
  return {};
}

async function deleteMessageBatch(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'consume');
  const entries = batchEntries(call.input, 'Entries');
  const failed: FailedEntry[] = [];
  const valid: { id: string; handle: Handle }[] = [];
  for (const entry of entries) {
    try {
      valid.push({ id: entry.Id, handle: verifyHandle(sqs, queue, entry) });
    } catch (error) {
      failed.push(failedEntry(entry.Id, error));
    }
  }
  const acked = await queue.ackMany(valid.map((item) => item.handle.token));
  const successful: { Id: string }[] = [];
  for (const [index, item] of valid.entries()) {
    try {
      const { handle } = item;
      if (acked[index]) {
        call.log.info({ queue: queue.name, jobId: handle.id, token: handle.token }, 'acked');
      } else await staleDelete(call, sqs, queue, handle);
      successful.push({ Id: item.id });
    } catch (error) {
      failed.push(failedEntry(item.id, error));
    }
  }
  return { Successful: successful, Failed: failed };
}

/**
 * VisibilityTimeout 0 gives the message back at once (nack, requeue); more sets the deadline
 * that many seconds from now, never past the queue's maxLease after the receive (12 h for a
 * queue made through SQS).
 */
async function changeOne(call: SqsCall, sqs: SqsServices, queue: Queue, input: SqsInput) {
  const handle = verifyHandle(sqs, queue, input);
  const seconds = requiredInteger(input, 'VisibilityTimeout', 0, MAX_VISIBILITY_SECONDS);
  checkSecondsWithin(sqs.services.limits, 'visibility', 'VisibilityTimeout', seconds);
  if (seconds === 0) {
    if (await queue.nack(handle.token)) {
      // Its last receive dead-letters the message instead (R13), as a nack over /v1 says.
      const fate = await nackFate(call.log, queue, sqs.services.queues, handle, true);
      call.log.info(
        { queue: queue.name, jobId: handle.id, token: handle.token, ...fate.fields },
        fate.msg,
      );
      return;
    }
  } else {
    // On the broker's clock, as the deadline extend answers: a server whose wall clock is not
    // the storage's would see a cap where there is none, or none where there is one.
    const wantedDeadline = sqs.services.now() + seconds * 1000;
    const deadline = await queue.extend(handle.token, seconds * 1000);
    if (deadline !== null) {
      call.log.info(
        { queue: queue.name, jobId: handle.id, token: handle.token, deadline },
        'extended',
      );
      if (deadline >= wantedDeadline - CLOCK_SLACK_MS) return;
      // The queue's own limit: a queue made through /v1 may have a maxLease below SQS's 12 h.
      const { maxLease } = await queue.options();
      const limit = Number.isFinite(maxLease) ? maxLease / 1000 : MAX_VISIBILITY_SECONDS;
      throw invalidParameter(
        'VisibilityTimeout',
        seconds,
        `Total VisibilityTimeout for the message is beyond the limit [${limit} seconds]; the message stays invisible until that limit.`,
      );
    }
  }
  call.log.info({ queue: queue.name, jobId: handle.id, token: handle.token }, 'stale change');
  // A receive of the dead-letter queue holding it is a later receive too.
  if ((await findMessage(sqs, queue, handle.id))?.state === 'active') {
    throw invalidParameter(
      'ReceiptHandle',
      handle.text,
      'The receipt handle has expired: a later receive holds the message.',
    );
  }
  throw new SqsError(
    'MessageNotInflight',
    `Message with receipt handle ${handle.text.slice(0, 80)} is not in flight.`,
  );
}

async function changeMessageVisibility(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'consume');
  await changeOne(call, sqs, queue, call.input);
  return {};
}

async function changeMessageVisibilityBatch(call: SqsCall, sqs: SqsServices) {
  const queue = await resolveQueue(call, sqs, 'consume');
  const entries = batchEntries(call.input, 'Entries');
  const successful: { Id: string }[] = [];
  const failed: FailedEntry[] = [];
  for (const entry of entries) {
    try {
      await changeOne(call, sqs, queue, entry);
      successful.push({ Id: entry.Id });
    } catch (error) {
      failed.push(failedEntry(entry.Id, error));
    }
  }
  return { Successful: successful, Failed: failed };
}

export const RECEIPT_ACTIONS: ActionTable = {
  DeleteMessage: deleteMessage,
  DeleteMessageBatch: deleteMessageBatch,
  ChangeMessageVisibility: changeMessageVisibility,
  ChangeMessageVisibilityBatch: changeMessageVisibilityBatch,
};
