import { type RemoteBroker, RemoteError } from '../../client/index.js';
import { build, NotFoundError, type QueueOptions } from '../../core/index.js';
import type { CliContext, Command, OptionsConfig, Values } from '../command.js';
import { EXIT, fromCommandLine, sayingDoneBefore, UsageError } from '../command.js';
import { integerFlag, positionals, stringFlag } from '../flags.js';
import { counted, formatOptions, formatStats } from '../format.js';
import { printJson, withClient } from '../remote.js';

const optionFlags: OptionsConfig = {
  visibility: { type: 'string' },
  prefetch: { type: 'string' },
  'max-deliveries': { type: 'string' },
  'max-lease': { type: 'string' },
  'dedup-window': { type: 'string' },
  'dead-letter-queue': { type: 'string' },
  retention: { type: 'string' },
  'max-length': { type: 'string' },
  overflow: { type: 'string' },
};

const OPTION_USAGE =
  '[--visibility MS] [--prefetch N] [--max-deliveries N] [--max-lease MS] [--dedup-window MS] [--dead-letter-queue NAME] [--retention MS] [--max-length N] [--overflow MODE]';

const OPTION_DETAILS = [
  '--visibility MS       lease of a delivery that names none (default 30000)',
  '--prefetch N          most active deliveries of the queue (default unbounded)',
  '--max-deliveries N    deliveries before a job is dead-lettered (default 10)',
  '--max-lease MS        longest a delivery can be extended to (default unbounded)',
  '--dedup-window MS     how long an acked id is still refused as a duplicate (default 0)',
  '--dead-letter-queue NAME  the queue a job that dies moves to, as ready (default none); one',
  '                      that does not exist yet is taken, said on stderr: until it is',
  "                      created, the queue's dead jobs stay in its own dead set",
  '--retention MS        a job still ready or delayed this long after its publish dies with',
  '                      reason expired; never ends a delivery (default none)',
  '--max-length N        the most ready jobs a publish may leave (default none)',
  '--overflow MODE       a publish beyond --max-length: reject (the default: refused with',
  '                      QUEUE_FULL, nothing stored) or dead-letter-oldest (taken; the oldest',
  '                      ready jobs die with reason maxlen)',
];

const OVERFLOW_MODES = ['reject', 'dead-letter-oldest'] as const;

/**
 * The queue options named by flags; absent flags are absent options. With `removable`
 * (update), `none` removes an option that has no default value (a bound, the dead-letter queue).
 */
function queueOptionsOf(values: Values, removable: boolean): QueueOptions {
  const bound = (flag: string): number | null | undefined =>
    removable && values[flag] === 'none' ? null : integerFlag(values, flag, 1);
  // Unbounded is these options' default (Infinity), and `none` asks for it.
  const unbounded = (flag: string): number | undefined =>
    removable && values[flag] === 'none' ? Number.POSITIVE_INFINITY : integerFlag(values, flag, 1);
  // On create, none is refused as it is for the bounds (a number): a queue named none, taken for
  // "no dead-letter queue", would be made the dead-letter queue.
  if (!removable && values['dead-letter-queue'] === 'none') {
    throw new UsageError(
      '--dead-letter-queue none is for queue update (it removes the dead-letter queue); a new queue has none unless the flag names one',
    );
  }
  const overflow = stringFlag(values, 'overflow');
  if (overflow !== undefined && !(OVERFLOW_MODES as readonly string[]).includes(overflow)) {
    throw new UsageError(
      `--overflow must be ${OVERFLOW_MODES.join(' or ')}, got ${JSON.stringify(overflow)}`,
    );
  }
  const options: QueueOptions = {
    visibility: integerFlag(values, 'visibility', 1),
    prefetch: unbounded('prefetch'),
    maxDeliveries: unbounded('max-deliveries'),
    maxLease: unbounded('max-lease'),
    dedupWindow: integerFlag(values, 'dedup-window', 0),
    deadLetterQueue:
      removable && values['dead-letter-queue'] === 'none'
        ? null
        : stringFlag(values, 'dead-letter-queue'),
    retention: bound('retention'),
    maxLength: bound('max-length'),
    overflow: overflow as QueueOptions['overflow'],
  };
  return Object.fromEntries(
    Object.entries(options).filter(([, value]) => value !== undefined),
  ) as QueueOptions;
}

export const queueCreate: Command = {
  name: 'queue create',
  summary: 'Create a queue (or check that it exists with these options)',
  usage: `<name> ${OPTION_USAGE}`,
  details: [
    ...OPTION_DETAILS,
    'Needs an admin key. Options other than the stored ones are a CONFLICT (see queue update).',
  ],
  options: optionFlags,
  remote: true,
  overHttp: true,
  async run({ values, positionals: given, context }) {
    const [name] = positionals(given, ['name']) as [string];
    const options = queueOptionsOf(values, false);
    // Refused for want of --visibility too (the default is above the server's
    // maxVisibilityMs): the command line is what to change, the refusal says how.
    const { view, missing } = await withClient(values, context, async (client) => {
      const view = await fromCommandLine(() => client.createQueue(name, options));
      return { view, missing: await missingDeadLetterQueue(client, options.deadLetterQueue) };
    });
    if (values.json) printJson(context, view);
    else {
      context.stdout.write(
        `${view.created ? 'created' : 'exists '} ${view.name}  ${formatOptions(view.options)}\n`,
      );
    }
    if (missing !== undefined) noteMissingDeadLetterQueue(context, name, missing);
    return EXIT.ok;
  },
};

export const queueUpdate: Command = {
  name: 'queue update',
  summary: 'Change options of a queue; the others keep their values',
  usage: `<name> ${OPTION_USAGE}`,
  details: [
    ...OPTION_DETAILS,
    "The defaults above are a new queue's: update changes only the options it names.",
    '--prefetch none, --max-deliveries none (never dead for its deliveries), --max-lease none,',
    '--dead-letter-queue none, --retention none and --max-length none remove the option (a queue',
    'named none cannot be a dead-letter queue here).',
    'Deliveries already made keep their deadlines; a lower --max-length drops nothing until the',
    'next publish. Needs an admin key.',
  ],
  options: optionFlags,
  remote: true,
  overHttp: true,
  async run({ values, positionals: given, context }) {
    const [name] = positionals(given, ['name']) as [string];
    const options = queueOptionsOf(values, true);
    if (Object.keys(options).length === 0)
      throw new UsageError('name at least one option to change');
    const { updated, missing } = await withClient(values, context, async (client) => {
      const updated = await fromCommandLine(() => client.updateQueue(name, options));
      return { updated, missing: await missingDeadLetterQueue(client, options.deadLetterQueue) };
    });
    if (values.json) printJson(context, { name, options: updated });
    else context.stdout.write(`updated ${name}  ${formatOptions(updated)}\n`);
    if (missing !== undefined) noteMissingDeadLetterQueue(context, name, missing);
    return EXIT.ok;
  },
};

/**
 * The dead-letter queue named, when it does not exist. It is taken all the same (R26: one
 * created later receives from then on, and no job is lost meanwhile), but a mistyped name would
 * otherwise pass unnoticed while dead jobs stay where they died. Undefined when none was named,
 * it exists, or it cannot be looked up (the queue's own change is done: not a failure).
 */
async function missingDeadLetterQueue(
  client: RemoteBroker,
  dlq: string | null | undefined,
): Promise<string | undefined> {
  if (typeof dlq !== 'string') return undefined;
  try {
    await client.handle(dlq).options();
    return undefined;
  } catch (error) {
    return error instanceof NotFoundError ? dlq : undefined;
  }
}

function noteMissingDeadLetterQueue(context: CliContext, name: string, dlq: string): void {
  context.stderr.write(
    `note: queue ${dlq} does not exist: until it is created, jobs that die in ${name} stay in its dead set (leaseq dead list ${name})\n`,
  );
}

export const queueList: Command = {
  name: 'queue list',
  summary: 'List the queues this key can see, with their options',
  usage: '',
  details: [],
  options: {},
  remote: true,
  overHttp: true,
  async run({ values, positionals: given, context }) {
    positionals(given, []);
    const queues = await withClient(values, context, (client) => client.listQueues());
    if (values.json) printJson(context, queues);
    // As dead list and schedule list say when they have nothing: not a silent success.
    else if (queues.length === 0) context.stderr.write('no queues\n');
    else {
      for (const queue of queues) {
        context.stdout.write(`${queue.name}  ${formatOptions(queue.options)}\n`);
      }
    }
    return EXIT.ok;
  },
};

export const queueStats: Command = {
  name: 'queue stats',
  summary: 'Show the figures of a queue: jobs by state, counters, processing time',
  usage: '<name>',
  details: ['Times are in milliseconds.'],
  options: {},
  remote: true,
  async run({ values, positionals: given, context }) {
    const [name] = positionals(given, ['name']) as [string];
    const stats = await withClient(values, context, (client) =>
      fromCommandLine(() => client.handle(name).stats()),
    );
    if (values.json) printJson(context, stats);
    else context.stdout.write(formatStats(stats));
    return EXIT.ok;
  },
};

export const queueMove: Command = {
  name: 'queue move',
  summary: 'Move ready and delayed jobs to another queue, or back to the queue they died in',
  usage: '<queue> [id ...] [--to NAME] [--origin NAME ...] [--max N]',
  details: [
    'Without --to, each job goes back to the queue it was dead-lettered from (jobs that came',
    'otherwise stay); ids, payloads and histories are kept, deliveryCount starts at 0.',
    'Without ids, every ready job (front first), then every delayed one; the jobs of a message',
    'group move whole, in order (each goes on as the one before it moves).',
    '--to NAME       the queue to move to (needs the right to publish there)',
    '--origin NAME   only the jobs that died in this queue (repeat it for several). Without',
    '                --to, a key that may not publish on every queue must name the queues the',
    '                jobs go back to this way, and needs the right to publish on each',
    '--max N         at most N jobs (default all)',
    'A --to queue that does not exist is an error (exit code 1), as a <queue> that does not,',
    'and --to naming <queue> itself a mistake (exit code 2): nothing is moved. A job the target',
    'cannot take (its id present there; without --to, a queue it died in that is gone) stays.',
    'Named ids of which fewer moved than named (or than --max) are exit code 3: absent, not',
    'ready or delayed, of another --origin or none, or not taken by the target. Without ids,',
    'moving nothing is done (exit code 0), as dead redrive and queue purge with nothing to do.',
    'On SQLite and PostgreSQL the move takes steps of 1,000 jobs, each kept once done: ended by',
    'an error, it says after the error how many jobs were moved before it, when any were.',
    'Needs an admin key.',
  ],
  options: {
    to: { type: 'string' },
    origin: { type: 'string', multiple: true },
    max: { type: 'string' },
  },
  remote: true,
  async run({ values, positionals: given, context }) {
    const [name, ...ids] = positionals(given, ['queue'], { rest: true }) as [string, ...string[]];
    const to = stringFlag(values, 'to');
    const origins = values.origin as string[] | undefined;
    const max = integerFlag(values, 'max', 1);
    // Every job of the queue is already there: each would stay, and "moved 0 jobs" would hide
    // the mistake.
    if (to === name) {
      throw new UsageError(`--to names ${name}, the queue the jobs are in: name another queue`);
    }
    const options = {
      ...(ids.length > 0 ? { ids } : {}),
      ...(to === undefined ? {} : { to }),
      ...(origins === undefined ? {} : { origins }),
      ...(max === undefined ? {} : { max }),
    };
    const moved = await withClient(values, context, async (client) => {
      // The command line's values are checked before the target is looked up: refused, exit 2.
      const queue = await fromCommandLine(() => {
        build.moveJobs(options);
        return client.handle(name);
      });
      if (to !== undefined) await targetExists(client, to);
      return fromCommandLine(() => sayingDoneBefore('moved', 0, () => queue.moveJobs(options)));
    });
    // Named ids, as cancel and dead redrive take them: those that stayed are exit code 3. The
    // answer is a count, so they are counted, not named.
    // With --max below them, --max of them are asked for: the count is of those.
    const named = new Set(ids).size;
    const asked = Math.min(named, max ?? named);
    const notMoved = ids.length === 0 ? 0 : Math.max(0, asked - moved);
    if (values.json) printJson(context, { moved, ...(ids.length > 0 ? { notMoved } : {}) });
    else {
      context.stdout.write(`moved ${counted(moved, 'job')}\n`);
      if (notMoved > 0) {
        const of =
          asked < named
            ? `the ${counted(asked, 'job')} asked for (--max ${asked} of the ${named} named; `
            : `the ${counted(named, 'job')} named (`;
        context.stdout.write(
          `not moved ${notMoved} of ${of}absent, not ready or delayed, of another origin or none, or not taken by the target)\n`,
        );
      }
    }
    return notMoved > 0 ? EXIT.stale : EXIT.ok;
  },
};

/**
 * Refuses a move to a queue that does not exist before anything moves. The engines leave a job
 * whose target is missing where it is (R26: a dead-letter queue deleted loses no job), so the
 * move would answer 0 and exit as one with nothing to do: a mistyped --to must not pass for
 * that. The same NOT_FOUND as for the queue moved from (exit code 1), saying which queue it is;
 * a key with no right there learns nothing of it (the move's FORBIDDEN names the right it needs).
 * A target deleted between this look-up and the move still leaves its jobs where they are.
 */
async function targetExists(client: RemoteBroker, to: string): Promise<void> {
  try {
    await client.handle(to).options();
  } catch (error) {
    // A key without rights there: the move is refused too, saying the right it needs.
    if (error instanceof RemoteError && error.code === 'FORBIDDEN') return;
    if (!(error instanceof NotFoundError)) throw error;
    throw new NotFoundError(
      `queue ${to} (--to) does not exist: nothing was moved (create it first, or name another)`,
      { cause: error },
    );
  }
}

/** `queue pause` and `queue resume`: one option of the queue (R27). */
function pausing(paused: boolean): Command {
  return {
    name: paused ? 'queue pause' : 'queue resume',
    summary: paused
      ? 'Pause a queue: it hands out nothing; publishes, acks and lease expiry go on'
      : 'Resume a paused queue: waiting receivers get its ready jobs at once',
    usage: '<name>',
    details: ['Needs an admin key. `queue stats` shows `paused`.'],
    options: {},
    remote: true,
    overHttp: true,
    async run({ values, positionals: given, context }) {
      const [name] = positionals(given, ['name']) as [string];
      const options = await withClient(values, context, (client) =>
        fromCommandLine(() => client.updateQueue(name, { paused })),
      );
      if (values.json) printJson(context, { name, options });
      else context.stdout.write(`${paused ? 'paused' : 'resumed'} ${name}\n`);
      return EXIT.ok;
    },
  };
}

export const queuePause = pausing(true);
export const queueResume = pausing(false);

export const queuePurge: Command = {
  name: 'queue purge',
  summary: 'Empty a queue: ready, delayed and in-flight jobs go (dead ones with --dead)',
  usage: '<name> [--dead]',
  details: [
    'In-flight deliveries end at once: their receipts are refused from then on (R19).',
    '--dead   remove the dead jobs too (default: kept)',
    'Needs an admin key.',
  ],
  options: { dead: { type: 'boolean' } },
  remote: true,
  async run({ values, positionals: given, context }) {
    const [name] = positionals(given, ['name']) as [string];
    const removed = await withClient(values, context, (client) =>
      fromCommandLine(() => client.handle(name).purgeQueue({ dead: values.dead === true })),
    );
    if (values.json) printJson(context, removed);
    else {
      context.stdout.write(
        `purged ${name}: ${removed.ready} ready, ${removed.delayed} delayed, ${removed.active} in flight, ${removed.dead} dead\n`,
      );
    }
    return EXIT.ok;
  },
};

export const queueDelete: Command = {
  name: 'queue delete',
  summary: 'Delete a queue with all it holds: jobs in every state, schedules, counters',
  usage: '<name>',
  details: [
    'Ready, delayed, in-flight and dead jobs go with it, as do its schedules, sessions and',
    'counters; in-flight deliveries end at once (their receipts are refused from then on).',
    'Nothing asks first, as for queue purge: name the queue with care. No such queue is an',
    'error (exit code 1), as for queue stats. Needs an admin key.',
  ],
  options: {},
  remote: true,
  overHttp: true,
  async run({ values, positionals: given, context }) {
    const [name] = positionals(given, ['name']) as [string];
    const deleted = await withClient(values, context, (client) =>
      fromCommandLine(() => client.deleteQueue(name)),
    );
    // The words queue stats and queue purge get from the server for a queue that is not there.
    if (!deleted) throw new NotFoundError(`queue ${name} does not exist`);
    if (values.json) printJson(context, { name, deleted });
    else context.stdout.write(`deleted ${name}\n`);
    return EXIT.ok;
  },
};
