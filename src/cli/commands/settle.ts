import type { RemoteQueue } from '../../client/index.js';
import { build, StorageUnavailableError } from '../../core/index.js';
import { type Command, fromCommandLine, UsageError } from '../command.js';
import { eachInput, reportEach } from '../each-input.js';
import { checkServerLimit, integerFlag, positionals, stringFlag } from '../flags.js';
import { formatTime } from '../format.js';
import { withClient } from '../remote.js';

export const ack: Command = {
  name: 'ack',
  summary: 'Complete deliveries by their receipts',
  usage: '<queue> <receipt> [receipt ...]',
  details: [
    'Prints acked or stale for each receipt. Exit code 3 when any delivery was no longer live',
    '(its lease ended: the job is, or will be, delivered again); 1 when a receipt was refused',
    '(not a receipt of this queue): the others are acked all the same, each reported.',
  ],
  options: {},
  remote: true,
  async run({ values, positionals: given, context }) {
    const [name, ...receipts] = positionals(given, ['queue', 'receipt'], { rest: true }) as [
      string,
      ...string[],
    ];
    // One call per receipt, as nack: in one call a refused receipt fails the call, and the
    // client sends more than the server's maxBatch as parts, some of which may have acked.
    // The queue's name is checked once: refused, it is the command line's mistake, not each
    // receipt's.
    const results = await withClient(values, context, async (client) => {
      const queue = await fromCommandLine(() => client.handle(name));
      return eachInput(receipts, async (receipt) => {
        const [acked] = await queue.ackReceipts([receipt]);
        return acked === true;
      });
    });
    return reportEach(
      receipts,
      results,
      {
        field: 'receipt',
        shown: shortReceipt,
        refused: 'not acked',
        resultField: 'acked',
        line: (acked, shown) => `${acked ? 'acked' : 'stale'} ${shown}`,
        notDone: (acked) => !acked,
      },
      values,
      context,
    );
  },
};

export const nack: Command = {
  name: 'nack',
  summary: 'Give deliveries back: requeue them (optionally after a delay) or dead-letter them',
  usage:
    '<queue> <receipt> [receipt ...] [--delay MS] [--unworked] [--dead [--reason TEXT]] [--error TEXT]',
  details: [
    '--delay MS       requeue after this many milliseconds (default: at once, at the front)',
    '--unworked       never worked on: not counted as a delivery of the job (R33)',
    '--dead           dead-letter instead of requeueing',
    '--reason TEXT    the dead-letter reason (default rejected)',
    "--error TEXT     what went wrong, kept with this attempt in the job's history (job, dead)",
    'Without --dead a job goes back to the queue, or dies (reason max-deliveries) when that',
    'delivery was its last (maxDeliveries): "nacked" says it was given back, either way.',
    'Exit code 3 when any delivery was no longer live; 1 when a receipt was refused (the others',
    'are nacked all the same, each reported).',
  ],
  options: {
    delay: { type: 'string' },
    dead: { type: 'boolean' },
    reason: { type: 'string' },
    error: { type: 'string' },
    unworked: { type: 'boolean' },
  },
  remote: true,
  async run({ values, positionals: given, context }) {
    const [name, ...receipts] = positionals(given, ['queue', 'receipt'], { rest: true }) as [
      string,
      ...string[],
    ];
    const delay = integerFlag(values, 'delay');
    const reason = stringFlag(values, 'reason');
    const error = stringFlag(values, 'error');
    if (values.unworked === true && values.dead === true) {
      throw new UsageError(
        '--unworked gives deliveries back to the queue: it cannot go with --dead',
      );
    }
    // Refused here, not dropped or left to fail per receipt: each says what it goes with.
    if (reason !== undefined && values.dead !== true) {
      throw new UsageError('--reason is the dead-letter reason: it goes with --dead');
    }
    if (error !== undefined && values.unworked === true) {
      throw new UsageError('--error describes an attempt, and --unworked records none: not both');
    }
    if (delay !== undefined && values.dead === true) {
      throw new UsageError(
        '--delay requeues later: a dead-lettered job is never ready, so not with --dead',
      );
    }
    const options = {
      requeue: values.dead !== true,
      ...(delay === undefined ? {} : { delay }),
      ...(reason === undefined ? {} : { reason }),
      ...(error === undefined ? {} : { error }),
      ...(values.unworked === true ? { attempted: false } : {}),
    };
    const results = await withClient(values, context, async (client) => {
      // The queue's name and the flags are checked once, before any receipt (the core's rules,
      // the server's limit): refused, they are the command line's mistake, not each receipt's.
      const queue = await fromCommandLine(() => {
        build.nack(1, options);
        return client.handle(name);
      });
      if (delay !== undefined) {
        checkServerLimit('delay', delay, (await limitsOf(queue))?.maxDelayMs, 'maxDelayMs');
      }
      return eachInput(receipts, (receipt) => queue.nackReceipt(receipt, options));
    });
    return reportEach(
      receipts,
      results,
      {
        field: 'receipt',
        shown: shortReceipt,
        refused: 'not nacked',
        resultField: 'nacked',
        line: (nacked, shown) => `${nacked ? nackOutcome(values) : 'stale'} ${shown}`,
        notDone: (nacked) => !nacked,
      },
      values,
      context,
    );
  },
};

export const extend: Command = {
  name: 'extend',
  summary: 'Give deliveries in hand more time: move their deadlines (R10)',
  usage: '<queue> <receipt> [receipt ...] --visibility MS',
  details: [
    "--visibility MS  each lease's new length, from now (required); never past the queue's",
    '                 maxLease from the delivery',
    'Prints each new deadline, or stale for a delivery no longer live. A deadline already',
    'passed means the delivery reached its maxLease: its lease has ended. Exit code 3 when any',
    'delivery was no longer live; 1 when a receipt was refused (the others are extended all the',
    'same, each reported).',
  ],
  options: { visibility: { type: 'string' } },
  remote: true,
  async run({ values, positionals: given, context }) {
    const [name, ...receipts] = positionals(given, ['queue', 'receipt'], { rest: true }) as [
      string,
      ...string[],
    ];
    const visibility = integerFlag(values, 'visibility', 1);
    if (visibility === undefined) throw new UsageError('--visibility MS is required');
    const results = await withClient(values, context, async (client) => {
      // As nack: the queue's name and --visibility are checked once, before any receipt.
      const queue = await fromCommandLine(() => client.handle(name));
      const limit = (await limitsOf(queue))?.maxVisibilityMs;
      checkServerLimit('visibility', visibility, limit, 'maxVisibilityMs');
      return eachInput(receipts, (receipt) => queue.extendReceipt(receipt, visibility));
    });
    return reportEach(
      receipts,
      results,
      {
        field: 'receipt',
        shown: shortReceipt,
        refused: 'not extended',
        resultField: 'deadline',
        line: (deadline, shown) =>
          deadline === null ? `stale ${shown}` : `extended ${shown} until ${formatTime(deadline)}`,
        notDone: (deadline) => deadline === null,
      },
      values,
      context,
    );
  },
};

/**
 * The server's limits, or undefined where they cannot be read for a reason each receipt's call
 * meets and says as for any other (a key refused). A server that cannot be reached ends the
 * command here, as eachInput ends it when no receipt reached it: read again for the receipts, a
 * server that does not answer would be waited for a second time.
 */
async function limitsOf(queue: RemoteQueue) {
  try {
    return await queue.limits();
  } catch (error) {
    if (error instanceof StorageUnavailableError) throw error;
    return undefined;
  }
}

/** A receipt as a line shows it: its start. */
function shortReceipt(receipt: string): string {
  return `${receipt.slice(0, 16)}…`;
}

function nackOutcome(values: { dead?: unknown; unworked?: unknown }): string {
  if (values.dead === true) return 'dead-lettered';
  // Without --dead the server may still dead-letter it (its last delivery): not "requeued".
  return values.unworked === true ? 'requeued unworked' : 'nacked';
}
