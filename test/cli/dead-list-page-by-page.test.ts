import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Broker, Queue } from '../../src/broker/index.js';
import { runCli } from '../../src/cli/run.js';
import type { DeadLetterPageOptions } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { withWrappedQueues } from '../server/helpers.js';
import { fakeContext } from './context.js';
import { deadLetterReady, serveForCommands } from './dead-set.js';

// `leaseq dead list <queue>` without --limit writes every dead job, each page as it is read: it
// read them all first and printed them at the end, so that 10,000 dead jobs of 100 KB, as
// `--json`, were one text longer than a JavaScript string can be (`RangeError: Invalid string
// length`, nothing printed), and a million small ones were all held at once.

const DEAD = 2_500;

let broker: Broker;
let close: () => Promise<void>;
let env: Record<string, string>;
/** The length of standard output at each read of a page. */
let printedAtRead: number[] = [];
let printed: () => number = () => 0;

beforeAll(async () => {
  broker = await open('memory:');
  ({ env, close } = await serveForCommands(
    broker,
    withWrappedQueues(broker, (queue: Queue) =>
      Object.assign(Object.create(queue) as Queue, {
        deadLetterPage: (options?: DeadLetterPageOptions) => {
          printedAtRead.push(printed());
          return queue.deadLetterPage(options);
        },
      }),
    ),
  ));
  const queue = await broker.queue('many', { maxDeliveries: 1 });
  await queue.publishBatch(
    Array.from({ length: DEAD }, (_, n) => ({ id: `job-${n}`, payload: { body: `p${n}` } })),
  );
  await deadLetterReady(queue, 'broken');
  await broker.queue('none');
});

afterAll(async () => {
  await close?.();
});

async function deadList(args: string[]) {
  const { context, stdout, stderr } = fakeContext({ env });
  printedAtRead = [];
  printed = () => stdout.text.length;
  const code = await runCli(['dead', 'list', ...args], context);
  return { code, stdout: stdout.text, stderr: stderr.text, printedAtRead };
}

describe('dead list of every dead job', () => {
  it('writes each page of JSON before it reads the next, as one document', async () => {
    const run = await deadList(['many', '--json']);
    expect(run.code).toBe(0);
    expect(run.printedAtRead).toHaveLength(3);
    const [first = 0, second = 0, third = 0] = run.printedAtRead;
    expect(second).toBeGreaterThan(first);
    expect(third).toBeGreaterThan(second);
    const listed = JSON.parse(run.stdout) as {
      deadLetters: { id: string; payload: unknown }[];
      next: null;
    };
    expect(listed.next).toBeNull();
    expect(listed.deadLetters.map((dead) => dead.id)).toEqual(
      Array.from({ length: DEAD }, (_, n) => `job-${n}`),
    );
    expect(listed.deadLetters[DEAD - 1]?.payload).toEqual({ body: `p${DEAD - 1}` });
    expect(run.stdout.endsWith('}\n')).toBe(true);
  });

  it('writes each page of text before it reads the next', async () => {
    const run = await deadList(['many']);
    expect(run.code).toBe(0);
    const [first = 0, second = 0, third = 0] = run.printedAtRead;
    expect(second).toBeGreaterThan(first);
    expect(third).toBeGreaterThan(second);
    const heads = run.stdout.split('\n').filter((line) => line.startsWith('job-'));
    expect(heads).toHaveLength(DEAD);
    expect(heads[DEAD - 1]).toMatch(/^job-2499 {2}reason=broken deliveries=1 /);
  });

  it('writes the same document as before for no dead job', async () => {
    const json = await deadList(['none', '--json']);
    expect(json.code).toBe(0);
    expect(json.stdout).toBe('{"deadLetters":[],"next":null}\n');
    const text = await deadList(['none']);
    expect(text.stdout).toBe('');
    expect(text.stderr).toBe('no dead jobs\n');
  });
});
