import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Output } from '../../src/cli/command.js';
import { runCli } from '../../src/cli/run.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { fakeContext } from './context.js';

// `leaseq publish q --file - --json > /dev/full`: each job's line is written as it is
// published. When standard output fails, the reading stops, and stderr says what was sent.

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server.close();
});

/** Standard output whose writes fail, as a full disk makes them, after `accepted` of them. */
function failingAfter(accepted: number): Output & { writes: number } {
  return {
    writes: 0,
    write(_chunk: string, done?: (error?: Error | null) => void) {
      this.writes += 1;
      const error =
        this.writes > accepted
          ? Object.assign(new Error('no space left on device'), { code: 'ENOSPC' })
          : null;
      if (done !== undefined) process.nextTick(done, error);
      return error === null;
    },
  };
}

describe('publish --json when standard output fails', () => {
  it('stops after the batch in hand and says how many jobs went out', async () => {
    const queue = await server.broker.queue('publish-full');
    const lines = Array.from({ length: 10 }, (_, n) => JSON.stringify({ payload: n + 1 }));
    const { context, stderr } = fakeContext({
      env: { LEASEQ_SERVER: server.baseUrl },
      stdin: `${lines.join('\n')}\n`,
    });
    let held = 0;
    const code = await runCli(
      ['publish', 'publish-full', '--file', '-', '--json', '--batch-size', '2'],
      {
        ...context,
        stdout: failingAfter(2),
        handleOutputErrors: () => {
          held += 1;
          return () => {
            held -= 1;
          };
        },
      },
    );
    expect(code).toBe(1);
    // The failure is heard after the batch whose lines failed, or the one after it.
    const said =
      /^leaseq publish: standard output failed \(ENOSPC\): stopped after line (\d+); (\d+) jobs published \(0 duplicates\), the lines after it not sent\n$/.exec(
        stderr.text,
      );
    expect(said, stderr.text).not.toBeNull();
    const [, line, published] = said as RegExpExecArray;
    expect(Number(line)).toBeLessThan(10);
    expect(published).toBe(line);
    expect((await queue.stats()).published).toBe(Number(published));
    expect(held).toBe(0);
  });

  it('says so when the failure comes with the last batch, whose writes answer last', async () => {
    const queue = await server.broker.queue('publish-full-last');
    const lines = Array.from({ length: 5 }, (_, n) => JSON.stringify({ payload: n + 1 }));
    const { context, stderr } = fakeContext({
      env: { LEASEQ_SERVER: server.baseUrl },
      stdin: `${lines.join('\n')}\n`,
    });
    const code = await runCli(['publish', 'publish-full-last', '--file', '-', '--json'], {
      ...context,
      stdout: failingAfter(0),
    });
    expect(code).toBe(1);
    expect(stderr.text).toBe(
      'leaseq publish: standard output failed (ENOSPC): stopped after line 5; 5 jobs published (0 duplicates), the lines after it not sent\n',
    );
    expect((await queue.stats()).published).toBe(5);
  });
});
