import type { RemoteQueue } from '../../client/index.js';
import {
  build,
  checkDeadLetterPage,
  DEFAULT_DEAD_LETTER_PAGE,
  type DeadLetterPage,
  MAX_DEAD_LETTER_PAGE,
} from '../../core/index.js';
import {
  type CliContext,
  type Command,
  EXIT,
  fromCommandLine,
  type Output,
  sayingDoneBefore,
  UsageError,
} from '../command.js';
import { checkServerLimit, integerFlag, positionals, saidMaxBatch } from '../flags.js';
import { counted, formatDeadLetter, shownId } from '../format.js';
import { ProgressBar } from '../progress.js';
import { printJson, withClient } from '../remote.js';

/**
 * The id of every dead job of `queue`, in the order they died, page after page. No payload is
 * read: a dead set of large payloads would otherwise all travel here (1,000 dead jobs of 200 KB
 * are 200 MB).
 */
async function everyDeadId(queue: RemoteQueue): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  do {
    const page = await queue.deadLetterPage({
      limit: MAX_DEAD_LETTER_PAGE,
      payloads: false,
      ...(after === undefined ? {} : { after }),
    });
    for (const dead of page.deadLetters) ids.push(dead.id);
    after = page.next;
  } while (after !== undefined);
  return ids;
}

/**
 * Writes `text` to `output`; resolves once it was handed to the system, or failed to be (a
 * reader gone away: the process hears of it as of any write).
 */
function written(output: Output, text: string): Promise<void> {
  return new Promise((resolve) => {
    output.write(text, () => resolve());
  });
}

/**
 * Writes every dead job of `queue`, in the order they died, each page as it is read (the next
 * read once the page was written): as text, or with `json` as `{"deadLetters": […], "next":
 * null}`, the payloads in it. Nothing holds the dead set whole: read whole first, 10,000 dead
 * jobs of 100 KB were one JSON text longer than a JavaScript string can be (`RangeError:
 * Invalid string length`, nothing printed), and a million small ones were all held at once.
 * Answers how many it wrote. An error part-way ends the output where it stands.
 */
async function writeEveryDeadLetter(
  queue: RemoteQueue,
  json: boolean,
  context: CliContext,
): Promise<number> {
  let count = 0;
  let after: string | undefined;
  if (json) await written(context.stdout, '{"deadLetters":[');
  do {
    const page = await queue.deadLetterPage({
      limit: MAX_DEAD_LETTER_PAGE,
      // Text output shows no payload: none is read for it.
      ...(json ? {} : { payloads: false }),
      ...(after === undefined ? {} : { after }),
    });
    const texts = page.deadLetters.map((dead) =>
      json ? JSON.stringify(dead) : formatDeadLetter(dead),
    );
    if (texts.length > 0) {
      await written(
        context.stdout,
        `${json && count > 0 ? ',' : ''}${texts.join(json ? ',' : '')}`,
      );
    }
    count += texts.length;
    after = page.next;
  } while (after !== undefined);
  if (json) await written(context.stdout, '],"next":null}\n');
  return count;
}

export const deadList: Command = {
  name: 'dead list',
  summary: 'List dead jobs with their attempt history, oldest first',
  usage: '<queue> [--limit N] [--after CURSOR]',
  details: [
    'Without --limit or --after, every dead job. With them, one page, and when more follow, the',
    'command that lists the next goes to stderr. --json prints {"deadLetters": […], "next"}',
    'either way, next the cursor of the page after, or null when none follows.',
    `--limit N         at most N dead jobs (1 to ${MAX_DEAD_LETTER_PAGE}; default ${DEFAULT_DEAD_LETTER_PAGE})`,
    '--after CURSOR    the jobs that died after the page this cursor ended (from a --limit list)',
    'Needs an admin key.',
  ],
  options: { limit: { type: 'string' }, after: { type: 'string' } },
  remote: true,
  overHttp: true,
  async run({ values, positionals: given, context }) {
    const [name] = positionals(given, ['queue']) as [string];
    const limit = integerFlag(values, 'limit', 1, MAX_DEAD_LETTER_PAGE);
    const after = typeof values.after === 'string' ? values.after : undefined;
    try {
      checkDeadLetterPage(after === undefined ? {} : { after });
    } catch {
      throw new UsageError(
        `--after must be the cursor a --limit list ended with, got ${JSON.stringify(after)}`,
      );
    }
    const paged = limit !== undefined || after !== undefined;
    // Text output shows no payload: none is read for it.
    const payloads = values.json === true;
    const page: DeadLetterPage | { written: number } = await withClient(values, context, (client) =>
      fromCommandLine(async () => {
        const queue = client.handle(name);
        // The pages are a look-up, which takes no step: a job whose last lease ran out is
        // dead-lettered by the queue's next step (R3, R13). A stats call is such a step, so
        // that the list has it too, as `dead redrive` redrives it.
        await queue.stats();
        return paged
          ? queue.deadLetterPage({
              ...(limit === undefined ? {} : { limit }),
              ...(after === undefined ? {} : { after }),
              ...(payloads ? {} : { payloads: false }),
            })
          : { written: await writeEveryDeadLetter(queue, payloads, context) };
      }),
    );
    if ('written' in page) {
      if (page.written === 0 && !payloads) context.stderr.write('no dead jobs\n');
      return EXIT.ok;
    }
    const dead = page.deadLetters;
    // One shape with or without paging flags: a script reads `next` either way.
    if (values.json) printJson(context, { deadLetters: dead, next: page.next ?? null });
    else if (dead.length === 0) context.stderr.write('no dead jobs\n');
    else for (const letter of dead) context.stdout.write(formatDeadLetter(letter));
    if (!values.json && page.next !== undefined) {
      context.stderr.write(
        `more: leaseq dead list ${name} --limit ${limit ?? DEFAULT_DEAD_LETTER_PAGE} --after ${page.next}\n`,
      );
    }
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
    'Named ids that are absent or not dead are left as they are (exit code 3). Stopped by',
    'SIGINT or SIGTERM, it finishes the batch in hand, says how many it did not try (exit 1).',
    'Ended by an error, it says after the error how many jobs were redriven before it, when any',
    'were (on SQLite and PostgreSQL a batch takes steps of 1,000 jobs, each kept once done).',
    "--batch-size N   ids per request without named ids (default and most: the server's maxBatch);",
    '                 refused with named ids (exit code 2)',
    '--progress       draw the progress bar even when stderr is not a terminal',
    'Needs an admin key.',
  ],
  options: { 'batch-size': { type: 'string' }, progress: { type: 'boolean' } },
  remote: true,
  hearsStop: true,
  async run({ values, positionals: given, context }) {
    const [name, ...named] = positionals(given, ['queue'], { rest: true }) as [string, ...string[]];
    const sizeGiven = integerFlag(values, 'batch-size', 1);
    if (sizeGiven !== undefined && named.length > 0) {
      // Named ids go one per request: a size would be silently of no effect.
      throw new UsageError(
        '--batch-size applies to a redrive of every dead job, not to named ids (each is redriven on its own)',
      );
    }
    const { redriven, notDead, unvisited } = await withClient(values, context, async (client) => {
      // The command line's values are checked before the first redrive: a refusal after it
      // would leave the jobs before redriven, not "nothing done".
      const queue = await fromCommandLine(() => {
        if (named.length > 0) build.redrive(named);
        return client.handle(name);
      });
      // Named ids go one per request, so that those that were not dead can be told apart.
      let step = 1;
      if (named.length === 0) {
        const limits = await queue.limits();
        checkServerLimit('batch-size', sizeGiven, saidMaxBatch(limits), 'maxBatch');
        step = sizeGiven ?? limits.maxBatch;
        // The list below is a look-up, which takes no step: a job whose last lease ran out is
        // dead-lettered by the queue's next step (R3, R13), as the server's redrive of every
        // dead job takes first. A stats call is such a step, so that the list has it too.
        await queue.stats();
      }
      // A job redriven by another client and dead again while the pages are read is on a
      // later page too (R34: it takes its new place); it is redriven once, as the others.
      const ids = [...new Set(named.length > 0 ? named : await everyDeadId(queue))];
      const bar = new ProgressBar(
        context.stderr,
        'redriving',
        values.progress === true || context.stderr.isTTY === true,
      );
      let moved = 0;
      let done = 0;
      const left: string[] = [];
      try {
        // SIGINT or SIGTERM: stop after the batch in hand.
        for (; done < ids.length && !context.stop.aborted; done += step) {
          const batch = ids.slice(done, done + step);
          const count = await sayingDoneBefore('redriven', moved, () => queue.redrive(batch));
          moved += count;
          if (named.length > 0 && count === 0) left.push(...batch);
          bar.update(Math.min(done + step, ids.length), ids.length, counted(moved, 'job'));
        }
      } finally {
        bar.finish();
      }
      return { redriven: moved, notDead: left, unvisited: Math.max(0, ids.length - done) };
    });
    if (values.json) {
      printJson(context, {
        redriven,
        ...(named.length > 0 ? { notRedriven: notDead } : {}),
        ...(unvisited > 0 ? { stopped: true, notTried: unvisited } : {}),
      });
    } else {
      const stopped = unvisited > 0 ? `; stopped with ${unvisited} not tried` : '';
      context.stdout.write(`redriven ${counted(redriven, 'job')}${stopped}\n`);
      for (const id of notDead)
        context.stdout.write(`not redriven (absent or not dead) ${shownId(id)}\n`);
    }
    // Stopped by a signal before the end, as publish: a failure, what was done said above.
    if (unvisited > 0) return EXIT.failed;
    return notDead.length > 0 ? EXIT.stale : EXIT.ok;
  },
};
