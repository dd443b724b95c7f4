import type { Command, OptionsConfig } from '../command.js';
import { EXIT } from '../command.js';
import { integerFlag, positionals } from '../flags.js';
import { formatOptions, formatStats } from '../format.js';
import { printJson, withClient } from '../remote.js';

const createOptions: OptionsConfig = {
  visibility: { type: 'string' },
  prefetch: { type: 'string' },
  'max-deliveries': { type: 'string' },
  'max-lease': { type: 'string' },
  'dedup-window': { type: 'string' },
};

export const queueCreate: Command = {
  name: 'queue create',
  summary: 'Create a queue (or check that it exists with these options)',
  usage:
    '<name> [--visibility MS] [--prefetch N] [--max-deliveries N] [--max-lease MS] [--dedup-window MS]',
  details: [
    '--visibility MS       lease of a delivery that names none (default 30000)',
    '--prefetch N          most active deliveries of the queue (default unbounded)',
    '--max-deliveries N    deliveries before a job is dead-lettered (default 10)',
    '--max-lease MS        longest a delivery can be extended to (default unbounded)',
    '--dedup-window MS     how long an acked id is still refused as a duplicate (default 0)',
    'Needs an admin key. Options other than the stored ones are a CONFLICT.',
  ],
  options: createOptions,
  remote: true,
  async run({ values, positionals: given, context }) {
    const [name] = positionals(given, ['name']) as [string];
    const options = {
      visibility: integerFlag(values, 'visibility', 1),
      prefetch: integerFlag(values, 'prefetch', 1),
      maxDeliveries: integerFlag(values, 'max-deliveries', 1),
      maxLease: integerFlag(values, 'max-lease', 1),
      dedupWindow: integerFlag(values, 'dedup-window', 0),
    };
    const view = await withClient(values, context, (client) => client.createQueue(name, options));
    if (values.json) printJson(context, view);
    else {
      context.stdout.write(
        `${view.created ? 'created' : 'exists '} ${view.name}  ${formatOptions(view.options)}\n`,
      );
    }
    return EXIT.ok;
  },
};

export const queueList: Command = {
  name: 'queue list',
  summary: 'List the queues this key can see, with their options',
  usage: '',
  details: [],
  options: {},
  remote: true,
  async run({ values, positionals: given, context }) {
    positionals(given, []);
    const queues = await withClient(values, context, (client) => client.listQueues());
    if (values.json) printJson(context, queues);
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
    const stats = await withClient(values, context, (client) => client.handle(name).stats());
    if (values.json) printJson(context, stats);
    else context.stdout.write(formatStats(stats));
    return EXIT.ok;
  },
};
