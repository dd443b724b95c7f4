import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { withWrappedQueues } from '../server/helpers.js';

/** The built CLI: `npm test` builds before vitest runs. */
const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const children: ChildProcess[] = [];
let close: (() => Promise<void>) | undefined;

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first`);
});

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  await close?.();
  close = undefined;
});

/** Its exit code, once its output has been read to the end too. Called right after spawn. */
function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('close', (code) => resolve(code)));
}

function text(stream: NodeJS.ReadableStream | null): () => string {
  let read = '';
  stream?.on('data', (chunk: Buffer) => {
    read += chunk.toString();
  });
  return () => read;
}

describe('the built CLI piped into a reader that leaves after one line', () => {
  it('receive --auto-ack --max 100 | head -n 1 removes the job shown and puts the other 99 back', async () => {
    // The first ack waits until the reader has exited: the next job is written to a pipe with
    // no reader, whatever the timing of the two processes.
    let readerGone = () => {};
    const gone = new Promise<void>((resolve) => {
      readerGone = resolve;
    });
    const real = await open('memory:');
    let acks = 0;
    const broker = withWrappedQueues(real, (queue) =>
      Object.assign(Object.create(queue), {
        execute: async (operations: readonly Operation[]) => {
          if (operations.some((operation) => operation.type === 'ack') && ++acks === 1) {
            await gone;
          }
          return queue.execute(operations);
        },
      }),
    );
    const app = await createApp({ receiptSecret: 'test-secret-of-at-least-32-characters', broker });
    const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    close = async () => {
      readerGone();
      await app.close();
      await real.close();
    };
    const queue = await real.queue('piped');
    await queue.publishBatch(
      Array.from({ length: 100 }, (_, n) => ({ id: `job-${n + 1}`, payload: { n: n + 1 } })),
    );

    // `leaseq receive piped --auto-ack --max 100 | head -n 1`: the CLI writes into head's stdin.
    const reader = spawn('head', ['-n', '1'], { stdio: ['pipe', 'pipe', 'ignore'] });
    children.push(reader);
    const shown = text(reader.stdout);
    const readerExit = exited(reader);
    const cli = spawn(
      process.execPath,
      [MAIN, 'receive', 'piped', '--auto-ack', '--max', '100', '--server', baseUrl],
      { stdio: ['ignore', reader.stdin ?? 'ignore', 'pipe'] },
    );
    children.push(cli);
    // The pipe's write end is the CLI's alone: head is its only reader.
    reader.stdin?.destroy();
    const stderr = text(cli.stderr);
    const cliExit = exited(cli);

    expect(await readerExit).toBe(0);
    readerGone();
    const code = await cliExit;
    // At once, in their order, and not counted as deliveries (R33): not after a lease ran out.
    const view = await queue.inspect();
    expect(view.ready).toEqual(Array.from({ length: 99 }, (_, n) => `job-${n + 2}`));
    expect(code, stderr()).toBe(1);
    expect(shown()).toMatch(/^id job-1 {2}token 1 {2}delivery 1 {2}\(removed: auto-ack\)\n$/);
    expect(stderr()).toBe(
      'leaseq receive: standard output failed (EPIPE): 1 job written and removed; 99 jobs not written put back in the queue\n',
    );
    expect(await queue.job('job-1')).toBeUndefined();
    expect((await queue.job('job-2'))?.deliveryCount).toBe(0);
    expect(await queue.stats()).toMatchObject({ ready: 99, active: 0, acks: 1, autoAcked: 0 });
    // One ack, held until head had gone: the job after it found no reader.
    expect(acks).toBe(1);
  }, 30_000);
});
