import { checkLookedUpId } from '../../core/index.js';
import { type Command, EXIT, fromCommandLine } from '../command.js';
import { positionals } from '../flags.js';
import { formatJob, shownId } from '../format.js';
import { printJson, withClient } from '../remote.js';

export const job: Command = {
  name: 'job',
  summary: 'Show one job by id: its state, lease or death, payload and attempt history',
  usage: '<queue> <id>',
  details: [
    'Prints the job as it stands: ready, delayed (until when), active (token and deadline) or',
    'dead (reason), where, why and when it died when it came by dead-lettering (from=,',
    'originReason=, originAt=), its payload, and one line per attempt. An id with no job is',
    'exit code 3 (an acked job is gone). Needs the consume right on the queue.',
  ],
  options: {},
  remote: true,
  overHttp: true,
  async run({ values, positionals: given, context }) {
    const [name, id] = positionals(given, ['queue', 'id']) as [string, string];
    await fromCommandLine(() => checkLookedUpId(id));
    const view = await withClient(values, context, (client) =>
      fromCommandLine(async () => {
        const queue = client.handle(name);
        // A look-up takes no step: a lease that ran out, the job's last (R3, R13), would show
        // as still active, its deadline past. A stats call is such a step, as for `dead list`.
        await queue.stats();
        return queue.job(id);
      }),
    );
    if (view === undefined) {
      if (values.json) printJson(context, null);
      else context.stderr.write(`no job ${shownId(id)} in ${name}\n`);
      return EXIT.stale;
    }
    if (values.json) printJson(context, view);
    else context.stdout.write(formatJob(view));
    return EXIT.ok;
  },
};
