import { type Command, EXIT } from '../command.js';
import { integerFlag, positionals } from '../flags.js';
import { formatDeadLetter } from '../format.js';
import { ProgressBar } from '../progress.js';
import { printJson, withClient } from '../remote.js';

export const deadList: Command = {
  name: 'dead list',
  summary: 'List dead jobs with their attempt history',
  usage: '<queue>',
  details: ['Needs an admin key.'],
  options: {},
  remote: true,
  async run({ values, positionals: given, context }) {
    const [name] = positionals(given, ['queue']) as [string];
    const dead = await withClient(values, context, (client) => client.handle(name).deadLetters());
    if (values.json) printJson(context, dead);
    else if (dead.length === 0) context.stderr.write('no dead jobs\n');
    else for (const letter of dead) context.stdout.write(formatDeadLetter(letter));
    return EXIT.ok;
  },
};

export const deadRedrive: Command = {
  name: 'dead redrive',
  summary: 'Move dead jobs back to ready (all, or the ids given), history kept',
  usage: '<queue> [id ...] [--batch-size N] [--progress]',
  details: [
    'Without ids, every job dead when the command starts is redriven, in batches with a',
    'progress bar on a terminal. Each job goes to the back of ready with deliveryCount 0.',
    '--batch-size N   ids per request (default 100)',
    '--progress       draw the progress bar even when stderr is not a terminal',
    'Needs an admin key.',
  ],
  options: { 'batch-size': { type: 'string' }, progress: { type: 'boolean' } },
  remote: true,
  async run({ values, positionals: given, context }) {
    const [name, ...named] = positionals(given, ['queue'], { rest: true }) as [string, ...string[]];
    const batchSize = integerFlag(values, 'batch-size', 1) ?? 100;
    const redriven = await withClient(values, context, async (client) => {
      const queue = client.handle(name);
      const ids = named.length > 0 ? named : (await queue.deadLetters()).map((dead) => dead.id);
      const bar = new ProgressBar(
        context.stderr,
        'redriving',
        values.progress === true || context.stderr.isTTY === true,
      );
      let moved = 0;
      try {
        // SIGINT or SIGTERM: stop after the batch in hand.
        for (let start = 0; start < ids.length && !context.stop.aborted; start += batchSize) {
          moved += await queue.redrive(ids.slice(start, start + batchSize));
          bar.update(Math.min(start + batchSize, ids.length), ids.length, `${moved} jobs`);
        }
      } finally {
        bar.finish();
      }
      return moved;
    });
    if (values.json) printJson(context, { redriven });
    else context.stdout.write(`redriven ${redriven} jobs\n`);
    return EXIT.ok;
  },
};
