import { type Command, fromCommandLine } from '../command.js';
import { eachInput, reportEach } from '../each-input.js';
import { positionals } from '../flags.js';
import { shownId } from '../format.js';
import { withClient } from '../remote.js';

export const cancel: Command = {
  name: 'cancel',
  summary: 'Cancel jobs by id: they die with reason "cancelled" (or go, with --remove)',
  usage: '<queue> <id> [id ...] [--remove]',
  details: [
    'A job being processed loses its delivery at once: its receipt is refused from then on,',
    "and a leaseq worker fires the handler's signal (at once in-process, else at its next",
    'lease renewal). Dead jobs and unknown ids are left as they are (exit code 3). Each id is',
    'cancelled on its own: one refused (exit code 1) leaves the others cancelled, each reported.',
    '--remove   remove the jobs instead of keeping them dead',
    'Needs an admin key.',
  ],
  options: { remove: { type: 'boolean' } },
  remote: true,
  async run({ values, positionals: given, context }) {
    const [name, ...ids] = positionals(given, ['queue', 'id'], { rest: true }) as [
      string,
      ...string[],
    ];
    const remove = values.remove === true;
    // Each id on its own, a bad one too: refused and reported, the others cancelled. The
    // queue's name is checked once: refused, it is the command line's mistake, not each id's.
    const results = await withClient(values, context, async (client) => {
      const queue = await fromCommandLine(() => client.handle(name));
      return eachInput(ids, (id) => queue.cancel(id, { remove }));
    });
    return reportEach(
      ids,
      results,
      {
        field: 'id',
        shown: (id) => id,
        refused: 'not cancelled',
        resultField: 'cancelled',
        line: (cancelled, id) =>
          `${cancelled ? 'cancelled' : 'not cancelled (absent or dead)'} ${shownId(id)}`,
        notDone: (cancelled) => !cancelled,
      },
      values,
      context,
    );
  },
};
