import type { ScheduleView } from '../../broker/index.js';
import { ValidationError } from '../../core/index.js';
import { type Command, EXIT, fromCommandLine, UsageError } from '../command.js';
import { parseExactJson } from '../exact-json.js';
import { integerFlag, positionals, stringFlag } from '../flags.js';
import { formatTime } from '../format.js';
import { printJson, withClient } from '../remote.js';

export const scheduleSet: Command = {
  name: 'schedule set',
  summary: 'Create or replace a periodic job of a queue (cron or every)',
  usage: '<queue> <name> (--cron EXPR [--timezone TZ] | --every MS) [--payload JSON]',
  details: [
    "--cron EXPR     a cron expression, e.g. '0 * * * *' (5 or 6 fields)",
    '--timezone TZ   IANA time zone the cron expression is read in (default UTC)',
    '--every MS      publish every MS milliseconds (at least 1000), counted from when it is set',
    "--payload JSON  the payload of every occurrence's job",
    'Each occurrence is published once, as job `name@ISO time`, by the servers over the',
    'storage; after downtime only the latest missed occurrence is published. Set again with the',
    'same definition, a schedule stays as it is (a deploy may set its schedules at every start).',
    'Needs an admin key.',
  ],
  options: {
    cron: { type: 'string' },
    timezone: { type: 'string' },
    every: { type: 'string' },
    payload: { type: 'string' },
  },
  remote: true,
  overHttp: true,
  async run({ values, positionals: given, context }) {
    const [queue, name] = positionals(given, ['queue', 'name']) as [string, string];
    const cron = stringFlag(values, 'cron');
    const every = integerFlag(values, 'every', 1000);
    if ((cron === undefined) === (every === undefined)) {
      throw new UsageError('give exactly one of --cron and --every');
    }
    const timezone = stringFlag(values, 'timezone');
    const payloadText = stringFlag(values, 'payload');
    let payload: unknown;
    if (payloadText !== undefined) {
      try {
        payload = parseExactJson(payloadText, '--payload');
      } catch (error) {
        if (error instanceof ValidationError) throw new UsageError(error.message);
        throw new UsageError(`--payload is not JSON: ${payloadText}`);
      }
    }
    const view = await withClient(values, context, (client) =>
      fromCommandLine(() =>
        client.handle(queue).schedule(name, (cron ?? every) as string | number, {
          ...(timezone === undefined ? {} : { timezone }),
          ...(payload === undefined ? {} : { payload }),
        }),
      ),
    );
    if (values.json) printJson(context, view);
    else context.stdout.write(describe(view));
    return EXIT.ok;
  },
};

export const scheduleList: Command = {
  name: 'schedule list',
  summary: 'List the periodic jobs of a queue with their next occurrence',
  usage: '<queue>',
  details: ['Needs an admin key.'],
  options: {},
  remote: true,
  overHttp: true,
  async run({ values, positionals: given, context }) {
    const [queue] = positionals(given, ['queue']) as [string];
    const schedules = await withClient(values, context, (client) =>
      fromCommandLine(() => client.handle(queue).schedules()),
    );
    if (values.json) printJson(context, schedules);
    else if (schedules.length === 0) context.stderr.write('no schedules\n');
    else for (const view of schedules) context.stdout.write(describe(view));
    return EXIT.ok;
  },
};

export const scheduleRemove: Command = {
  name: 'schedule remove',
  summary: 'Remove a periodic job (the jobs it published stay)',
  usage: '<queue> <name>',
  details: ['Exit code 3 when there was no such schedule. Needs an admin key.'],
  options: {},
  remote: true,
  overHttp: true,
  async run({ values, positionals: given, context }) {
    const [queue, name] = positionals(given, ['queue', 'name']) as [string, string];
    const removed = await withClient(values, context, (client) =>
      fromCommandLine(() => client.handle(queue).removeSchedule(name)),
    );
    if (values.json) printJson(context, { name, removed });
    else context.stdout.write(`${removed ? 'removed' : 'no schedule'} ${name}\n`);
    return removed ? EXIT.ok : EXIT.stale;
  },
};

function describe(view: ScheduleView): string {
  const when =
    view.cron === undefined
      ? `every ${view.every} ms`
      : `cron '${view.cron}'${view.timezone === undefined ? '' : ` in ${view.timezone}`}`;
  // A schedule stored by an older version may have no time to come (a cron of 31 February).
  const next = view.nextAt === Number.MAX_SAFE_INTEGER ? 'never' : formatTime(view.nextAt);
  const problem = view.problem === undefined ? '' : `  (${view.problem})`;
  return `${view.name}  ${when}  next ${next}${problem}\n`;
}
