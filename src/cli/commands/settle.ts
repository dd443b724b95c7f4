import { type Command, EXIT, UsageError } from '../command.js';
import { integerFlag, positionals, stringFlag } from '../flags.js';
import { formatTime } from '../format.js';
import { printJson, withClient } from '../remote.js';

/** 0 when every receipt was settled, 3 when some named a delivery no longer live. */
function exitFor(results: boolean[]): number {
  return results.every(Boolean) ? EXIT.ok : EXIT.stale;
}

export const ack: Command = {
  name: 'ack',
  summary: 'Complete deliveries by their receipts',
  usage: '<queue> <receipt> [receipt ...]',
  details: [
    'Prints acked or stale for each receipt. Exit code 3 when any delivery was no longer live',
    '(its lease ended: the job is, or will be, delivered again). The receipts go in one call:',
    'one that is not a receipt of this queue fails them all, acking none (exit 1).',
  ],
  options: {},
  remote: true,
  async run({ values, positionals: given, context }) {
    const [name, ...receipts] = positionals(given, ['queue', 'receipt'], { rest: true }) as [
      string,
      ...string[],
    ];
    const results = await withClient(values, context, (client) =>
      client.handle(name).ackReceipts(receipts),
    );
    receipts.forEach((receipt, index) => {
      const acked = results[index] === true;
      if (values.json) printJson(context, { receipt, acked });
      else context.stdout.write(`${acked ? 'acked' : 'stale'} ${receipt.slice(0, 16)}…\n`);
    });
    return exitFor(results);
  },
};

export const nack: Command = {
  name: 'nack',
  summary: 'Give deliveries back: requeue them (optionally after a delay) or dead-letter them',
  usage: '<queue> <receipt> [receipt ...] [--delay MS] [--unworked] [--dead [--reason TEXT]]',
  details: [
    '--delay MS       requeue after this many milliseconds (default: at once, at the front)',
    '--unworked       never worked on: not counted as a delivery of the job (R33)',
    '--dead           dead-letter instead of requeueing',
    '--reason TEXT    the dead-letter reason (default rejected)',
    'Without --dead a job goes back to the queue, or dies (reason max-deliveries) when that',
    'delivery was its last (maxDeliveries): "nacked" says it was given back, either way.',
    'Exit code 3 when any delivery was no longer live; 1 when a receipt was refused (the others',
    'are nacked all the same, each reported).',
  ],
  options: {
    delay: { type: 'string' },
    dead: { type: 'boolean' },
    reason: { type: 'string' },
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
    if (values.unworked === true && values.dead === true) {
      throw new UsageError(
        '--unworked gives deliveries back to the queue: it cannot go with --dead',
      );
    }
    // Refused here, not dropped or left to fail per receipt: each says what it goes with.
    if (reason !== undefined && values.dead !== true) {
      throw new UsageError('--reason is the dead-letter reason: it goes with --dead');
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
      ...(values.unworked === true ? { attempted: false } : {}),
    };
    const results = await withClient(values, context, (client) =>
      eachReceipt(receipts, (receipt) => client.handle(name).nackReceipt(receipt, options)),
    );
    receipts.forEach((receipt, index) => {
      const result = results[index] as boolean | Refusal;
      const shown = `${receipt.slice(0, 16)}…`;
      if (isRefusal(result)) {
        if (values.json) printJson(context, { receipt, error: result });
        else context.stderr.write(`not nacked ${shown}: ${result.code}: ${result.message}\n`);
        return;
      }
      if (values.json) printJson(context, { receipt, nacked: result });
      else context.stdout.write(`${result ? nackOutcome(values) : 'stale'} ${shown}\n`);
    });
    return exitForEach(results, (nacked) => !nacked);
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
    const results = await withClient(values, context, (client) =>
      eachReceipt(receipts, (receipt) => client.handle(name).extendReceipt(receipt, visibility)),
    );
    receipts.forEach((receipt, index) => {
      const result = results[index] as number | null | Refusal;
      const shown = `${receipt.slice(0, 16)}…`;
      if (isRefusal(result)) {
        if (values.json) printJson(context, { receipt, error: result });
        else context.stderr.write(`not extended ${shown}: ${result.code}: ${result.message}\n`);
        return;
      }
      if (values.json) printJson(context, { receipt, deadline: result });
      else if (result === null) context.stdout.write(`stale ${shown}\n`);
      else context.stdout.write(`extended ${shown} until ${formatTime(result)}\n`);
    });
    return exitForEach(results, (deadline) => deadline === null);
  },
};

/** A receipt refused on its own (not a receipt, another queue's), as the CLI reports it. */
interface Refusal {
  code: string;
  message: string;
}

/**
 * Settles each receipt on its own: one refused leaves the others' calls done, and each is
 * reported. The value of each call, or its refusal.
 */
async function eachReceipt<T>(
  receipts: readonly string[],
  settle: (receipt: string) => Promise<T>,
): Promise<(T | Refusal)[]> {
  const results: (T | Refusal)[] = [];
  for (const receipt of receipts) {
    try {
      results.push(await settle(receipt));
    } catch (error) {
      const { code = 'ERROR', message = String(error) } = error as Partial<Refusal>;
      results.push({ code, message });
    }
  }
  return results;
}

function isRefusal(result: unknown): result is Refusal {
  return typeof result === 'object' && result !== null && 'code' in result;
}

/** 1 when a receipt was refused; else 3 when any delivery was no longer live; else 0. */
function exitForEach<T>(results: readonly (T | Refusal)[], stale: (result: T) => boolean): number {
  if (results.some(isRefusal)) return EXIT.failed;
  return results.some((result) => stale(result as T)) ? EXIT.stale : EXIT.ok;
}

function nackOutcome(values: { dead?: unknown; unworked?: unknown }): string {
  if (values.dead === true) return 'dead-lettered';
  // Without --dead the server may still dead-letter it (its last delivery): not "requeued".
  return values.unworked === true ? 'requeued unworked' : 'nacked';
}
