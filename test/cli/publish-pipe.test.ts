import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';

/** The built CLI: `npm test` builds before vitest runs. */
const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const children: ChildProcess[] = [];
let server: TestServer;
let dir: string;

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first`);
  server = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'leaseq-cli-pipe-'));
});

afterAll(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  await server.close();
  rmSync(dir, { recursive: true, force: true });
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

describe('the built CLI publishing JSON lines into a reader that leaves after one line', () => {
  it('publish --json | head -n 1 stops after the batch in hand and says on stderr how many went out', async () => {
    // Far more output than a pipe holds: the reader is gone before the last lines are written.
    const count = 5000;
    const file = join(dir, 'jobs.jsonl');
    writeFileSync(
      file,
      `${Array.from({ length: count }, (_, n) => JSON.stringify({ id: `job-${n + 1}` })).join('\n')}\n`,
    );
    const queue = await server.broker.queue('piped');

    // `leaseq publish piped --file jobs.jsonl --json | head -n 1`.
    const reader = spawn('head', ['-n', '1'], { stdio: ['pipe', 'pipe', 'ignore'] });
    children.push(reader);
    const shown = text(reader.stdout);
    const readerExit = exited(reader);
    const cli = spawn(
      process.execPath,
      [MAIN, 'publish', 'piped', '--file', file, '--json', '--server', server.baseUrl],
      { stdio: ['ignore', reader.stdin ?? 'ignore', 'pipe'] },
    );
    children.push(cli);
    // The pipe's write end is the CLI's alone: head is its only reader.
    reader.stdin?.destroy();
    const stderr = text(cli.stderr);
    const cliExit = exited(cli);

    expect(await readerExit).toBe(0);
    const code = await cliExit;
    expect(shown()).toBe('{"id":"job-1","duplicate":false}\n');
    // Not the quiet 141 of other commands: exit 1, and what was published, as for a full disk.
    expect(code, stderr()).toBe(1);
    const said =
      /^leaseq publish: standard output failed \(EPIPE\): stopped after line (\d+); (\d+) jobs published \(0 duplicates\), the lines after it not sent\n$/.exec(
        stderr(),
      );
    expect(said, stderr()).not.toBeNull();
    const [, line, published] = said as RegExpExecArray;
    expect(published).toBe(line);
    expect(Number(published)).toBeLessThan(count);
    expect((await queue.stats()).published).toBe(Number(published));
    // Whole batches of the server's maxBatch, and the lines after them not sent.
    expect(Number(published) % 100).toBe(0);
    expect((await queue.inspect()).ready.at(-1)).toBe(`job-${published}`);
  }, 30_000);
});
