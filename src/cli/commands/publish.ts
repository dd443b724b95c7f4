import { type FileHandle, open } from 'node:fs/promises';
import {
  publishJobBytes,
  publishRoom,
  type RemoteBroker,
  RemoteError,
  type RemoteQueue,
} from '../../client/index.js';
import {
  mayHaveTakenEffect,
  type PublishInput,
  type PublishResult,
  ValidationError,
} from '../../core/index.js';
import { BatchCut } from '../batches.js';
import {
  type CliContext,
  type Command,
  EXIT,
  fromCommandLine,
  UsageError,
  type Values,
} from '../command.js';
import { parseExactJson } from '../exact-json.js';
import { checkServerLimit, integerFlag, positionals, saidMaxBatch, stringFlag } from '../flags.js';
import { counted, shownId } from '../format.js';
import { type Line, LineError, readLines } from '../json-lines.js';
import { ProgressBar } from '../progress.js';
import { printJson, withClient } from '../remote.js';

/** The flags that set a field of every job given as an argument. */
const JOB_FLAGS = ['id', 'delay', 'priority', 'group', 'expires-at'] as const;
const JOB_FIELDS = '"id", "delay", "priority", "group", "expiresAt"';

/** Files at least this large get a progress bar on a terminal. */
const PROGRESS_FROM_BYTES = 1024 * 1024;

export const publish: Command = {
  name: 'publish',
  summary: 'Publish jobs: payloads as arguments, or JSON lines from a file or stdin',
  usage:
    '<queue> [PAYLOAD_JSON ...] [--id ID] [--delay MS] [--priority N] [--group KEY] [--expires-at MS] | <queue> --file FILE|- [--batch-size N] [--progress]',
  details: [
    "PAYLOAD_JSON   each argument is one job's payload, as JSON ('{\"n\":1}', '\"text\"', 42)",
    '--id ID        the job id (with one payload); generated when absent',
    '--delay MS     make the jobs ready after this many milliseconds',
    '--priority N   0 (default, lowest) to 9: higher priorities are received first',
    '--group KEY    message group: one job of a group at a time, in publish order',
    "--expires-at MS  the server's time (epoch ms) at which the jobs die with reason expired if",
    '               still ready or delayed',
    '--file FILE    JSON lines, one job a line: {"id"?: …, "payload"?: …, "delay"?: …,',
    '               "priority"?: …, "group"?: …, "expiresAt"?: …};',
    '               - (or no payloads with stdin not a terminal) reads standard input',
    "--batch-size N jobs per request (default and most: the server's maxBatch), fewer where",
    "               their JSON is more than one request takes (the server's maxBodyBytes); each",
    '               batch is all or nothing: refused, it stops the command, the batches before',
    '               it published; one whose answer was lost (the connection broke) stops it too,',
    '               said to be published or not: look before sending its lines again',
    '--progress     draw a progress bar on stderr even when it is not a terminal',
    'The job flags go with payload arguments, --batch-size and --progress with lines: mixed,',
    'exit code 2.',
    'A line that is not JSON, not well-formed UTF-8 (never read as U+FFFD) or longer than',
    '256 MiB, or a job larger than one request takes, is refused with its batch (the lines read',
    'since the last batch published, not sent): exit code 1, saying how many jobs were',
    'published before it. So is a line holding a number JSON would not keep exactly (1e400,',
    '1e-400, a whole number beyond 2^53 - 1), as the server refuses it, rather than sent',
    'changed; in a payload argument it is exit code 2.',
    'SIGINT or SIGTERM (also while waiting for input): the batch in hand is published, nothing',
    'more is read, exit code 1 ("stopped before line N"); a second signal ends it at once.',
  ],
  options: {
    id: { type: 'string' },
    delay: { type: 'string' },
    priority: { type: 'string' },
    group: { type: 'string' },
    'expires-at': { type: 'string' },
    file: { type: 'string' },
    'batch-size': { type: 'string' },
    progress: { type: 'boolean' },
  },
  remote: true,
  hearsStop: true,
  async run({ values, positionals: given, context }) {
    const [name, ...payloads] = positionals(given, ['queue'], { rest: true }) as [
      string,
      ...string[],
    ];
    const file =
      stringFlag(values, 'file') ??
      (payloads.length === 0 && !context.stdin.isTTY ? '-' : undefined);
    if (file !== undefined && payloads.length > 0) {
      throw new UsageError('give payloads as arguments or --file, not both');
    }
    if (file === undefined && payloads.length === 0) {
      throw new UsageError('give payloads as arguments, --file FILE, or JSON lines on stdin');
    }
    // Each flag goes with one form only: taken by the other, it would be dropped unseen.
    const jobFlags = JOB_FLAGS.filter((flag) => values[flag] !== undefined);
    if (file !== undefined && jobFlags.length > 0) {
      throw new UsageError(
        `${jobFlags.map((flag) => `--${flag}`).join(', ')} go${jobFlags.length === 1 ? 'es' : ''} with payloads given as arguments; in JSON lines, give them as fields of each job (${JOB_FIELDS})`,
      );
    }
    for (const flag of ['batch-size', 'progress']) {
      if (file === undefined && values[flag] !== undefined) {
        throw new UsageError(`--${flag} goes with --file or JSON lines on stdin`);
      }
    }
    if (file === undefined) {
      return withClient(values, context, async (client) =>
        publishArguments(
          await fromCommandLine(() => client.handle(name)),
          payloads,
          values,
          context,
        ),
      );
    }
    if (file === '-') {
      return withClient(values, context, (client) =>
        publishLines(client, name, { stream: context.stdin }, values, context),
      );
    }
    // Opened before the server is asked anything: a mistyped path is the command line's error.
    const handle = await openInput(file);
    try {
      const { size } = await handle.stat();
      return await withClient(values, context, (client) =>
        publishLines(
          client,
          name,
          { stream: handle.createReadStream({ autoClose: false }), size },
          values,
          context,
        ),
      );
    } finally {
      await handle.close();
    }
  },
};

async function openInput(file: string): Promise<FileHandle> {
  try {
    const handle = await open(file, 'r');
    if ((await handle.stat()).isDirectory()) {
      await handle.close();
      throw new UsageError(`--file ${file} is a directory, not a file of JSON lines`);
    }
    return handle;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : String(error);
    throw new UsageError(`cannot read --file ${file}: ${why}`);
  }
}

async function publishArguments(
  queue: RemoteQueue,
  payloads: string[],
  values: Values,
  context: CliContext,
): Promise<number> {
  const id = stringFlag(values, 'id');
  const delay = integerFlag(values, 'delay');
  const priority = integerFlag(values, 'priority', 0, 9);
  const group = stringFlag(values, 'group');
  const expiresAt = integerFlag(values, 'expires-at');
  if (id !== undefined && payloads.length > 1) throw new UsageError('--id goes with one payload');
  const jobs = payloads.map((text, index) => ({
    payload: parseJson(text, `payload ${index + 1}`),
    ...(id === undefined ? {} : { id }),
    ...(delay === undefined ? {} : { delay }),
    ...(priority === undefined ? {} : { priority }),
    ...(group === undefined ? {} : { group }),
    ...(expiresAt === undefined ? {} : { expiresAt }),
  }));
  // The jobs are the command line's: one refused (an id, --delay above the server's
  // maxDelayMs) is its mistake.
  const results = await fromCommandLine(() => queue.publishBatch(jobs));
  for (const result of results) report(result, values, context);
  return EXIT.ok;
}

async function publishLines(
  client: RemoteBroker,
  name: string,
  input: { stream: AsyncIterable<string | Buffer>; size?: number },
  values: Values,
  context: CliContext,
): Promise<number> {
  // Checked before the server is asked anything, as every other flag: no count is the command
  // line's mistake whatever the server.
  const batchSize = integerFlag(values, 'batch-size', 1);
  const queue = await fromCommandLine(() => client.handle(name));
  const limits = await queue.limits();
  const maxBodyBytes = limits.maxBodyBytes ?? Number.POSITIVE_INFINITY;
  // Above the server's maxBatch, every batch would be refused: the first, before anything.
  checkServerLimit('batch-size', batchSize, saidMaxBatch(limits), 'maxBatch');
  // A queue that is not there (or a key refused on it) is said with its code before any line
  // is read, as for payload arguments: not "published 0 jobs" to it, nor a refusal of line 1.
  await queue.options();
  // Batches of --batch-size jobs, fewer where their JSON is more than one request takes: each
  // is one publish the server takes (or refuses) whole.
  const cut = new BatchCut(
    batchSize ?? limits.maxBatch,
    publishRoom(client.transport, queue.name, maxBodyBytes),
    1, // the comma between two jobs
  );
  const total = input.size;
  const bar = new ProgressBar(
    context.stderr,
    'publishing',
    values.progress === true ||
      (context.stderr.isTTY === true && total !== undefined && total >= PROGRESS_FROM_BYTES),
  );
  let bytes = 0;
  const counts = { published: 0, duplicates: 0 };
  const source = input.stream;
  let batch: LineJob[] = [];
  // With --json each job's line is written as it is published: standard output failing (a full
  // disk, a reader gone) stops the reading after the batch in hand, said on stderr with what was
  // published, rather than ending the process with some of the input sent and no word of how much.
  let outputFailed: Error | undefined;
  let lastLine = 0;
  const endHandling = values.json ? context.handleOutputErrors?.() : undefined;
  const flush = async () => {
    if (batch.length === 0) return;
    const results = await publishBatch(queue, batch, counts);
    for (const result of results) {
      if (result.duplicate) counts.duplicates += 1;
      else counts.published += 1;
      if (values.json) {
        printJson(context, result, (error) => {
          if (error) outputFailed ??= error;
        });
      }
    }
    lastLine = batch.at(-1)?.number ?? lastLine;
    bar.update(bytes, total, counted(counts.published + counts.duplicates, 'job'));
    batch = [];
    cut.clear();
  };
  let stoppedBefore: number | undefined;
  // SIGINT or SIGTERM: finish the batch in hand, read no further (a wait for input ends then).
  const lines = readLines(source, {
    onBytes: (n) => {
      bytes += n;
    },
    signal: context.stop,
  });
  try {
    for (;;) {
      let next: IteratorResult<Line, number | undefined>;
      try {
        next = await lines.next();
      } catch (error) {
        // Not UTF-8, or too long: refused as a line that is not JSON is, its batch unpublished.
        if (!(error instanceof LineError)) throw error;
        const before = counts.published + counts.duplicates;
        throw new Error(
          `${error.message} (${counted(before, 'job')} ${before === 1 ? 'was' : 'were'} published before it)`,
          {
            cause: error,
          },
        );
      }
      if (next.done === true) {
        stoppedBefore = next.value;
        break;
      }
      // A line that cannot be a job, or one too large for any request, is refused with the
      // lines of its batch (those read since the last batch published): nothing of it is sent.
      const job = parseJob(next.value, counts);
      const size = Number.isFinite(cut.maxBytes) ? publishJobBytes(job.job) : 0;
      if (!cut.fitsAlone(size)) {
        throw tooLarge(job.number, size, cut.maxBytes, maxBodyBytes, counts);
      }
      if (!cut.fits(size)) {
        await flush();
        if (outputFailed !== undefined) break;
      }
      batch.push(job);
      cut.add(size);
      if (cut.full) await flush();
      if (outputFailed !== undefined) break;
    }
    if (outputFailed === undefined) await flush();
    // The last lines' writes answer once written: a failure among them is heard here too.
    if (values.json) {
      await new Promise<void>((resolve) => {
        context.stdout.write('', (error) => {
          if (error) outputFailed ??= error;
          resolve();
        });
      });
    }
  } finally {
    bar.finish();
    // A refused batch ends the reading too: the input is let go, as a for-await would.
    await lines.return(undefined);
    // Said just below when it failed (or drowned by the error thrown).
    endHandling?.(outputFailed !== undefined);
  }
  if (outputFailed !== undefined) {
    const code = (outputFailed as NodeJS.ErrnoException).code ?? outputFailed.message;
    context.stderr.write(
      `leaseq publish: standard output failed (${code}): stopped after line ${lastLine}; ${counted(counts.published, 'job')} published (${counted(counts.duplicates, 'duplicate')}), the lines after it not sent\n`,
    );
    return EXIT.failed;
  }
  if (!values.json) {
    const stopped = stoppedBefore === undefined ? '' : `; stopped before line ${stoppedBefore}`;
    context.stdout.write(
      `published ${counted(counts.published, 'job')} (${counted(counts.duplicates, 'duplicate')}) to ${queue.name}${stopped}\n`,
    );
  } else if (stoppedBefore !== undefined) {
    // Standard output holds the jobs' lines alone: the stop is said on stderr, as a failure is.
    context.stderr.write(
      `leaseq publish: stopped before line ${stoppedBefore}; ${counted(counts.published, 'job')} published (${counted(counts.duplicates, 'duplicate')}) to ${queue.name}\n`,
    );
  }
  return stoppedBefore === undefined ? EXIT.ok : EXIT.failed;
}

/** A line of the input and the job it holds. */
interface LineJob {
  number: number;
  job: PublishInput;
}

type Counts = { published: number; duplicates: number };

function publishedBefore(counts: Counts): string {
  const before = counts.published + counts.duplicates;
  return `${counted(before, 'job')} ${before === 1 ? 'was' : 'were'} published before`;
}

/** The job of a line: a JSON object (its fields are checked with its batch). */
function parseJob(line: Line, counts: Counts): LineJob {
  let job: unknown;
  try {
    job = parseExactJson(line.text, `line ${line.number}`);
  } catch (error) {
    // A number it would not keep exactly is refused as text that is not JSON is.
    if (error instanceof ValidationError) {
      throw new Error(`${error.message} (${publishedBefore(counts)} it)`, { cause: error });
    }
    throw new Error(`line ${line.number} is not JSON (${publishedBefore(counts)} it)`);
  }
  if (typeof job !== 'object' || job === null || Array.isArray(job)) {
    throw new Error(
      `line ${line.number}: a job is a JSON object {"id"?, "payload"?, "delay"?} (${publishedBefore(counts)} it)`,
    );
  }
  return { number: line.number, job: job as PublishInput };
}

/** A job larger than any request the server takes: PAYLOAD_TOO_LARGE, as sending it would be. */
function tooLarge(
  line: number,
  size: number,
  room: number,
  maxBodyBytes: number,
  counts: Counts,
): Error {
  const why = `line ${line} is a job of ${size} bytes of JSON, more than a request to the server takes: at most ${room} bytes of jobs, its maxBodyBytes being ${maxBodyBytes}`;
  return new Error(`${why} (${publishedBefore(counts)} it)`, {
    cause: new RemoteError('PAYLOAD_TOO_LARGE', 413, why),
  });
}

async function publishBatch(
  queue: RemoteQueue,
  batch: readonly LineJob[],
  counts: Counts,
): Promise<PublishResult[]> {
  try {
    return await queue.publishBatch(batch.map((line) => line.job));
  } catch (error) {
    const first = batch[0]?.number;
    const last = batch.at(-1)?.number;
    const which = first === last ? `line ${first}` : `lines ${first}–${last}`;
    // No answer came (the connection broke, or none in time), or the server's storage failed
    // at the commit: the server may have published the batch. Said as "not published", its
    // lines would be sent again, and those without an id published twice.
    const unknown = mayHaveTakenEffect(error);
    const outcome = unknown
      ? `${which} may or may not have been published`
      : `${which} ${first === last ? 'was' : 'were'} not published`;
    // The batch's jobs[k] (its one job: job) is a line of the file: named by its number, as
    // the lines above are, on either transport.
    const reason = (error as Error).message.replace(
      /(?:\boperations\[\d+\]\.)?\b(?:jobs\[(\d+)\]|job(?=\.\w))(\.)?/g,
      (whole, index: string | undefined, dot: string | undefined) => {
        const line = batch[Number(index ?? 0)];
        if (line === undefined) return whole;
        return dot === undefined ? `line ${line.number}` : `line ${line.number}: `;
      },
    );
    throw new Error(
      `${outcome} (${publishedBefore(counts)} ${first === last ? 'it' : 'them'}): ${reason}`,
      {
        cause: error,
      },
    );
  }
}

function parseJson(text: string, what: string): unknown {
  try {
    return parseExactJson(text, what);
  } catch (error) {
    if (error instanceof ValidationError) throw new UsageError(error.message);
    throw new UsageError(`${what} is not JSON (quote text: '"hello"'): ${text.slice(0, 60)}`);
  }
}

function report(result: PublishResult, values: Values, context: CliContext): void {
  if (values.json) printJson(context, result);
  else {
    // R29: a grouped job's place among the groups' jobs of the queue.
    const seq = result.groupSeq === undefined ? '' : ` (group sequence ${result.groupSeq})`;
    context.stdout.write(
      `${result.duplicate ? 'duplicate' : 'published'} ${shownId(result.id)}${seq}\n`,
    );
  }
}
