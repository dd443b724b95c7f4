import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Output } from '../../src/cli/command.js';
import { runCli } from '../../src/cli/run.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { fakeContext } from './context.js';

// `leaseq receive q --auto-ack --max N | head -1`: the reader goes away after the first job. A
// job must be removed only once its text was written; the others go back to the queue.

let server: TestServer;
let counter = 0;

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server.close();
});

/** Standard output whose reader goes away after `accepted` writes, as a stream reports it. */
class ReaderGone implements Output {
  text = '';
  writes = 0;
  constructor(
    private readonly accepted: number,
    private readonly how: 'callback' | 'throw' = 'callback',
  ) {}
  write(chunk: string, done?: (error?: Error | null) => void): boolean {
    this.writes += 1;
    if (this.writes <= this.accepted) {
      this.text += chunk;
      if (done !== undefined) process.nextTick(done);
      return true;
    }
    const error = Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
    if (this.how === 'throw') throw error;
    if (done !== undefined) process.nextTick(done, error);
    return false;
  }
}

async function queueOf(count: number) {
  const name = `auto${++counter}`;
  const queue = await server.broker.queue(name);
  await queue.publishBatch(Array.from({ length: count }, (_, n) => ({ id: `j${n + 1}` })));
  return { name, queue };
}

async function receiveInto(stdout: Output, argv: string[], stop?: AbortSignal) {
  const { context, stderr } = fakeContext({ env: { LEASEQ_SERVER: server.baseUrl } });
  let handling = 0;
  let handled = 0;
  const code = await runCli(['receive', ...argv], {
    ...context,
    ...(stop === undefined ? {} : { stop }),
    stdout,
    handleOutputErrors: () => {
      handling += 1;
      return () => {
        handling -= 1;
        handled += 1;
      };
    },
  });
  return { code, stderr: stderr.text, handling, handled };
}

describe('receive --auto-ack when standard output fails', () => {
  it('R33 removes only the job written and puts the others back, unworked and in order', async () => {
    const { name, queue } = await queueOf(5);
    const stdout = new ReaderGone(1);
    const run = await receiveInto(stdout, [name, '--auto-ack', '--max', '5']);
    expect((await queue.inspect()).ready).toEqual(['j2', 'j3', 'j4', 'j5']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'leaseq receive: standard output failed (EPIPE): 1 job written and removed; 4 jobs not written put back in the queue\n',
    );
    expect(stdout.text).toMatch(/^id j1 {2}token \d+ {2}delivery 1 {2}\(removed: auto-ack\)\n/);
    // Written once, failed once: no job is written after the reader went away.
    expect(stdout.writes).toBe(2);
    expect(await queue.job('j1')).toBeUndefined();
    // Given back unworked (R33): not counted as a delivery of those jobs.
    expect((await queue.job('j2'))?.deliveryCount).toBe(0);
    expect(await queue.stats()).toMatchObject({ ready: 4, active: 0, acks: 1, autoAcked: 0 });
    // Standard output's failure was the command's to handle while it wrote, and only then.
    expect({ handling: run.handling, handled: run.handled }).toEqual({ handling: 0, handled: 1 });
  });

  it('puts every job back when the first write throws', async () => {
    const { name, queue } = await queueOf(3);
    const stdout = new ReaderGone(0, 'throw');
    const run = await receiveInto(stdout, [name, '--auto-ack', '--max', '3']);
    expect((await queue.inspect()).ready).toEqual(['j1', 'j2', 'j3']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('0 jobs written and removed; 3 jobs not written put back');
    expect(stdout.text).toBe('');
    expect(await queue.stats()).toMatchObject({ ready: 3, active: 0, acks: 0, autoAcked: 0 });
  });

  it('with --json, one document: all of it written and removed, or none removed', async () => {
    const { name, queue } = await queueOf(3);
    const failed = await receiveInto(new ReaderGone(0), [
      name,
      '--auto-ack',
      '--max',
      '3',
      '--json',
    ]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('3 jobs not written put back');
    expect((await queue.inspect()).ready).toEqual(['j1', 'j2', 'j3']);

    const stdout = new ReaderGone(1);
    const done = await receiveInto(stdout, [name, '--auto-ack', '--max', '3', '--json']);
    expect(done).toMatchObject({ code: 0, stderr: '' });
    const shown = JSON.parse(stdout.text);
    expect(shown.map((d: { id: string }) => d.id)).toEqual(['j1', 'j2', 'j3']);
    // Given back unworked first: the delivery that was written is their first.
    expect(shown.map((d: { deliveryCount: number }) => d.deliveryCount)).toEqual([1, 1, 1]);
    expect(shown[0]).not.toHaveProperty('receipt');
    expect(shown[0]).not.toHaveProperty('deadline');
    expect(await queue.stats()).toMatchObject({ ready: 0, active: 0, acks: 3 });
  });

  it('puts back more jobs than one batch of the server may hold, in their order', async () => {
    const { name, queue } = await queueOf(250);
    const run = await receiveInto(new ReaderGone(1), [name, '--auto-ack', '--max', '250']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('1 job written and removed; 249 jobs not written put back');
    const ready = (await queue.inspect()).ready;
    expect(ready).toEqual(Array.from({ length: 249 }, (_, n) => `j${n + 2}`));
    expect(await queue.stats()).toMatchObject({ active: 0, acks: 1 });
  });
});

describe('receive --auto-ack stopped by a signal while it writes', () => {
  it('stops writing, puts the jobs not written back and says how many', async () => {
    const { name, queue } = await queueOf(5);
    const stop = new AbortController();
    let text = '';
    const stdout: Output = {
      write(chunk: string, done?: (error?: Error | null) => void) {
        text += chunk;
        stop.abort();
        if (done !== undefined) process.nextTick(done);
        return true;
      },
    };
    const run = await receiveInto(stdout, [name, '--auto-ack', '--max', '5'], stop.signal);
    expect(run.code).toBe(1);
    expect(text.match(/^id /gm)).toHaveLength(1);
    expect(run.stderr).toBe(
      'leaseq receive: stopped by a signal: 1 job written and removed; 4 jobs not written put back in the queue\n',
    );
    expect((await queue.inspect()).ready).toEqual(['j2', 'j3', 'j4', 'j5']);
    expect(await queue.stats()).toMatchObject({ active: 0, acks: 1 });
  });

  it('a signal while a write waits on a reader that does not read takes that job as written, the rest back', async () => {
    const { name, queue } = await queueOf(5);
    const stop = new AbortController();
    let writes = 0;
    const stdout: Output = {
      write(_chunk: string, done?: (error?: Error | null) => void) {
        writes += 1;
        // The second write waits for a reader that never comes; a signal then.
        if (writes === 1 && done !== undefined) process.nextTick(done);
        else setTimeout(() => stop.abort(), 20);
        return writes === 1;
      },
    };
    const run = await receiveInto(stdout, [name, '--auto-ack', '--max', '5'], stop.signal);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'leaseq receive: stopped by a signal: 2 jobs written (the last still waiting for its reader) and removed; 3 jobs not written put back in the queue\n',
    );
    // Its text is in the process's output, to reach the reader if it reads: not given back,
    // where it could be shown and then run again.
    expect((await queue.inspect()).ready).toEqual(['j3', 'j4', 'j5']);
    expect(await queue.stats()).toMatchObject({ active: 0, acks: 2 });
  });
});

describe('receive --auto-ack against a server that takes few bytes in a batch', () => {
  it('puts the jobs back in batches small enough, in their order', async () => {
    const small = await startTestServer({ limits: { maxBodyBytes: 8192 } });
    try {
      const name = 'few-bytes';
      const queue = await small.broker.queue(name);
      await queue.publishBatch(Array.from({ length: 100 }, (_, n) => ({ id: `j${n + 1}` })));
      const { context, stderr } = fakeContext({ env: { LEASEQ_SERVER: small.baseUrl } });
      const code = await runCli(['receive', name, '--auto-ack', '--max', '100'], {
        ...context,
        stdout: new ReaderGone(1),
      });
      expect(code).toBe(1);
      expect(stderr.text).toContain('1 job written and removed; 99 jobs not written put back');
      const ready = (await queue.inspect()).ready;
      expect(ready).toEqual(Array.from({ length: 99 }, (_, n) => `j${n + 2}`));
    } finally {
      await small.close();
    }
  });

  it('with --json acks the jobs written in parts the server takes', async () => {
    const small = await startTestServer({ limits: { maxBodyBytes: 2048 } });
    try {
      const queue = await small.broker.queue('few-bytes-json');
      await queue.publishBatch(Array.from({ length: 100 }, (_, n) => ({ id: `j${n + 1}` })));
      const { context, stdout } = fakeContext({ env: { LEASEQ_SERVER: small.baseUrl } });
      const code = await runCli(
        ['receive', 'few-bytes-json', '--auto-ack', '--max', '100', '--json'],
        context,
      );
      expect(code).toBe(0);
      expect(JSON.parse(stdout.text)).toHaveLength(100);
      expect(await queue.stats()).toMatchObject({ ready: 0, active: 0, acks: 100 });
    } finally {
      await small.close();
    }
  });
});
