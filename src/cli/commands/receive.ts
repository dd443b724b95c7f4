import type { ReceivedDelivery, RemoteQueue } from '../../client/index.js';
import { build } from '../../core/index.js';
import { inParts } from '../batches.js';
import { type CliContext, type Command, EXIT, fromCommandLine, type Output } from '../command.js';
import { integerFlag, positionals } from '../flags.js';
import { counted, formatTime, shownId } from '../format.js';
import { printJson, withClient } from '../remote.js';

export const receive: Command = {
  name: 'receive',
  summary: 'Reserve jobs and print them with the receipts that ack or nack them',
  usage: '<queue> [--max N] [--visibility MS] [--wait MS] [--auto-ack]',
  details: [
    '--max N           at most this many jobs (default 1)',
    '--visibility MS   lease length (default: the queue visibility)',
    '--wait MS         wait up to this long for a job (long poll; default 0)',
    '--auto-ack        remove each job once it is written out (at most once: a job whose',
    '                  processing fails is lost; nothing to ack afterwards). The jobs are',
    '                  leased until written (the queue prefetch bound applies); when standard',
    '                  output fails (its reader went away: `| head -1`), those not written go',
    '                  back to the queue unworked (R33), and it exits 1 saying how many',
    'Each job stays hidden until its lease ends; settle it with `leaseq ack` or `leaseq nack`.',
  ],
  options: {
    max: { type: 'string' },
    visibility: { type: 'string' },
    wait: { type: 'string' },
    'auto-ack': { type: 'boolean' },
  },
  remote: true,
  hearsStop: true,
  async run({ values, positionals: given, context }) {
    const [name] = positionals(given, ['queue']) as [string];
    const max = integerFlag(values, 'max', 1);
    const visibility = integerFlag(values, 'visibility', 1);
    const wait = integerFlag(values, 'wait', 0);
    const json = values.json === true;
    const options = {
      ...(max === undefined ? {} : { max }),
      ...(visibility === undefined ? {} : { visibility }),
      ...(wait === undefined ? {} : { wait }),
      signal: context.stop,
    };
    // A queue name or --visibility refused is the command line's mistake. Without --visibility
    // the lease is the queue's own, which the server refuses above its maxVisibilityMs: a
    // stored setting, not the command line, is what is wrong then.
    const receiveFrom = async (queue: RemoteQueue) =>
      visibility === undefined
        ? queue.receiveWithReceipts(options)
        : fromCommandLine(() => queue.receiveWithReceipts(options));
    if (values['auto-ack'] === true) {
      // Not `ack: 'auto'` (R22): a job removed as it is handed out is lost when its text cannot
      // be written. Leased, each is acked once written, and the others are given back.
      return withClient(values, context, async (client) => {
        const queue = await fromCommandLine(() => client.handle(name));
        const deliveries = await receiveFrom(queue);
        if (deliveries.length === 0) return nothingReceived(queue, json, context);
        return writeThenAck(queue, deliveries, json, context);
      });
    }
    const deliveries = await withClient(values, context, async (client) => {
      const queue = await fromCommandLine(() => client.handle(name));
      const received = await receiveFrom(queue);
      return received.length === 0 ? nothingReceived(queue, json, context) : received;
    });
    if (typeof deliveries === 'number') return deliveries;
    if (json)
      printJson(
        context,
        deliveries.map((delivery) => toJson(delivery, false)),
      );
    else for (const delivery of deliveries) context.stdout.write(describe(delivery, false));
    return EXIT.ok;
  },
};

/**
 * `[]` with --json; and why on stderr: a signal stopped the wait (with --json too: exit code 1
 * needs its word), or, without --json, nothing was ready, or the queue is paused (R27: its
 * ready jobs are there, but none is handed out).
 */
async function nothingReceived(
  queue: RemoteQueue,
  json: boolean,
  context: CliContext,
): Promise<number> {
  // Stopped by a signal before a job came: not "no job ready" (a script would go on).
  const stopped = context.stop.aborted;
  if (json) printJson(context, []);
  if (stopped) context.stderr.write('stopped before a job came\n');
  else if (!json && (await isPaused(queue))) {
    context.stderr.write(
      `no job handed out: queue ${queue.name} is paused (leaseq queue resume ${queue.name})\n`,
    );
  } else if (!json) context.stderr.write('no job ready\n');
  return stopped ? EXIT.failed : EXIT.ok;
}

/** Whether the queue is paused; false when its options cannot be read (nothing more to say). */
async function isPaused(queue: RemoteQueue): Promise<boolean> {
  try {
    return (await queue.options()).paused === true;
  } catch {
    return false;
  }
}

/**
 * Writes the jobs (one write each, or one JSON document), acking each write's jobs once it is
 * handed to the system, before the next: a reader gone meanwhile fails the next write, not a
 * job taken. When a write fails, or a signal stops the command, the jobs not written are given
 * back unworked at once. One ack at a time on purpose: writes as fast as a pipe takes them would
 * fill its buffer, and a reader that leaves (`| head -1`) takes that buffer's jobs with it,
 * written and so removed.
 */
async function writeThenAck(
  queue: RemoteQueue,
  deliveries: readonly ReceivedDelivery[],
  json: boolean,
  context: CliContext,
): Promise<number> {
  const writes = json
    ? [{ text: `${JSON.stringify(deliveries.map((d) => toJson(d, true)))}\n`, jobs: deliveries }]
    : deliveries.map((delivery) => ({ text: describe(delivery, true), jobs: [delivery] }));
  let removed = 0;
  let stale = 0;
  let left = [...deliveries];
  const endHandling = context.handleOutputErrors?.();
  // Whether stderr told of a failure of the output: a later one then ends the process quietly.
  let said = false;
  try {
    for (const { text, jobs: batch } of writes) {
      const sofar = `${counted(removed, 'job')} written and removed${staleNote(stale)};`;
      if (context.stop.aborted) {
        said = true;
        return await giveBack(queue, left, `stopped by a signal: ${sofar}`, context);
      }
      // A write may wait on a full pipe as long as its reader does not read. A signal meanwhile
      // takes its text as written (handed to the process's output, it reaches the reader if
      // the reader reads: given back, the job could be shown and run again) and gives back
      // those after it.
      const outcome = await writtenOrStopped(context.stdout, text, context.stop);
      if (outcome === 'stopped') {
        left = left.slice(batch.length);
        const acked = await ackAll(queue, batch);
        removed += acked.filter(Boolean).length;
        stale += acked.filter((done) => !done).length;
        const pending = `${counted(removed, 'job')} written (the last still waiting for its reader) and removed${staleNote(stale)};`;
        said = true;
        return await giveBack(queue, left, `stopped by a signal: ${pending}`, context);
      }
      if (outcome !== 'written') {
        const { error } = outcome;
        const why =
          error instanceof Error ? ((error as NodeJS.ErrnoException).code ?? error.message) : error;
        said = true;
        return await giveBack(queue, left, `standard output failed (${why}): ${sofar}`, context);
      }
      left = left.slice(batch.length);
      const acked = await ackAll(queue, batch);
      removed += acked.filter(Boolean).length;
      stale += acked.filter((done) => !done).length;
    }
  } catch (error) {
    // The server refused an ack, or went away: the jobs not written go back, if it still can;
    // those of the ack in question were written and may or may not be removed.
    const putBack =
      left.length === 0 ? 0 : await giveBackAll(queue, left).then(putBackCount, () => 0);
    context.stderr.write(
      `leaseq receive: ${counted(removed, 'job')} written and removed; the last written may be delivered again; ${counted(putBack, 'job')} not written put back in the queue${putBack === left.length ? '' : `, ${left.length - putBack} left leased until their leases end`}\n`,
    );
    throw error;
  } finally {
    endHandling?.(said);
  }
  if (stale === 0) return EXIT.ok;
  context.stderr.write(
    `leaseq receive: ${counted(stale, 'job')} written had lost ${stale === 1 ? 'its lease' : 'their leases'} before the ack (written later than --visibility): not removed, ${stale === 1 ? 'it' : 'they'} will be delivered again\n`,
  );
  return EXIT.stale;
}

/**
 * After a failed write or a signal: the jobs not written go back to the front of ready,
 * unworked (R33), and stderr says how many after `head` (what was written and removed).
 */
async function giveBack(
  queue: RemoteQueue,
  left: readonly ReceivedDelivery[],
  head: string,
  context: CliContext,
): Promise<number> {
  let outcomes: Outcomes;
  try {
    outcomes = await giveBackAll(queue, left);
  } catch (failure) {
    const deadline = Math.max(...left.map((job) => job.deadline));
    context.stderr.write(
      `leaseq receive: ${head} ${counted(left.length, 'job')} not written could not be put back (${(failure as Error).message}): they return when their leases end, by ${formatTime(deadline)}\n`,
    );
    return EXIT.failed;
  }
  const putBack = putBackCount(outcomes);
  const lost = left.length - putBack;
  context.stderr.write(
    `leaseq receive: ${head} ${counted(putBack, 'job')} not written put back in the queue${lost === 0 ? '' : ` (${lost} had lost their lease already: delivered again)`}\n`,
  );
  return EXIT.failed;
}

/** How many of a give-back's nacks put their job back. */
function putBackCount(outcomes: Outcomes): number {
  return outcomes.filter((outcome) => outcome.ok && outcome.value === true).length;
}

/**
 * The nacks of `build.giveBack`, in order, so the jobs keep theirs at the front of ready (in
 * executes that the server takes: see inParts).
 */
function giveBackAll(queue: RemoteQueue, left: readonly ReceivedDelivery[]): Promise<Outcomes> {
  const operations = build.giveBack(left.map((job) => job.token));
  return inParts(queue, operations, (part) => queue.execute(part));
}

/** Acks of the jobs written, answered for each (in parts the server takes: see inParts). */
function ackAll(queue: RemoteQueue, written: readonly ReceivedDelivery[]): Promise<boolean[]> {
  return inParts(queue, written, (part) => queue.ackMany(part.map((job) => job.token)));
}

/** The answers of a queue's execute. */
type Outcomes = Awaited<ReturnType<RemoteQueue['execute']>>;

/** "1 job", "2 jobs". */
/** ", and 2 more written had lost their lease (delivered again)", when some had. */
function staleNote(stale: number): string {
  return stale === 0 ? '' : `, and ${stale} more written had lost their lease (delivered again)`;
}

/** Whether `text` was handed to the system, failed (the error), or `stop` came first. */
function writtenOrStopped(
  output: Output,
  text: string,
  stop: AbortSignal,
): Promise<'written' | 'stopped' | { error: unknown }> {
  let onAbort = () => {};
  const stopped = new Promise<'stopped'>((resolve) => {
    // A turn of the loop first: a write that is not waiting on its reader completes in it.
    onAbort = () => setImmediate(() => resolve('stopped'));
    stop.addEventListener('abort', onAbort, { once: true });
  });
  const write = written(output, text).then(
    () => 'written' as const,
    (error: unknown) => ({ error }),
  );
  return Promise.race([write, stopped]).finally(() => stop.removeEventListener('abort', onAbort));
}

/** Resolves once `text` is handed to the system; rejects with the error when that fails. */
function written(output: Output, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    try {
      output.write(text, (error) => (error ? reject(error) : resolve()));
    } catch (error) {
      reject(error);
    }
  });
}

/** As the API answers it: receipt and token first. */
function toJson(delivery: ReceivedDelivery, autoAcked: boolean) {
  const { receipt, token, deadline, ...rest } = delivery;
  return autoAcked ? { token, ...rest } : { receipt, token, deadline, ...rest };
}

function describe(delivery: ReceivedDelivery, autoAcked: boolean): string {
  const lease = autoAcked ? '  (removed: auto-ack)' : `  deadline ${formatTime(delivery.deadline)}`;
  return [
    `id ${shownId(delivery.id)}  token ${delivery.token}  delivery ${delivery.deliveryCount}${lease}`,
    ...(autoAcked ? [] : [`  receipt ${delivery.receipt}`]),
    // A job published without one has none (JSON would print the word undefined).
    delivery.payload === undefined
      ? '  (no payload)'
      : `  payload ${JSON.stringify(delivery.payload)}`,
    '',
  ].join('\n');
}
