import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// `leaseq queue move` with ids named, as cancel and dead redrive take them: those that stay are
// exit code 3. Without ids, moving nothing is done, as for dead redrive and queue purge.

let server: TestServer;
let env: Record<string, string>;
let counter = 0;
const fresh = () => `move${++counter}`;
const run = (argv: string[]) => leaseq(argv, { env });

beforeAll(async () => {
  server = await startTestServer();
  env = { LEASEQ_SERVER: server.baseUrl };
});

afterAll(async () => {
  await server.close();
});

async function queuesWithJobs(ids: string[]): Promise<{ from: string; to: string }> {
  const from = fresh();
  const to = fresh();
  await run(['queue', 'create', from]);
  await run(['queue', 'create', to]);
  for (const id of ids) await run(['publish', from, '--id', id, '{}']);
  return { from, to };
}

async function ready(name: string): Promise<string[]> {
  return [...(await (await server.broker.queue(name)).inspect()).ready];
}

describe('leaseq queue move and the jobs it leaves', () => {
  for (const transport of ['stream', 'http']) {
    it(`exits 3 when a job named stays, saying how many, and 0 when all named move (${transport})`, async () => {
      const { from, to } = await queuesWithJobs(['a', 'b']);
      const t = ['--transport', transport];
      const some = await run(['queue', 'move', from, 'a', 'absent', '--to', to, ...t]);
      expect(some).toEqual({
        code: 3,
        stdout:
          'moved 1 job\nnot moved 1 of the 2 jobs named (absent, not ready or delayed, of another origin or none, or not taken by the target)\n',
        stderr: '',
      });
      expect(await ready(to)).toEqual(['a']);
      // None of them moves (a was moved already): 3 as well, the count in the JSON.
      const none = await run(['queue', 'move', from, 'a', 'a', '--to', to, '--json', ...t]);
      expect(none).toMatchObject({ code: 3, stderr: '' });
      expect(JSON.parse(none.stdout)).toEqual({ moved: 0, notMoved: 1 });
      // A target that cannot take it (it holds a job b already) leaves it where it is: 3 too.
      const holder = fresh();
      await run(['queue', 'create', holder]);
      await run(['publish', holder, '--id', 'b', '{}']);
      const taken = await run(['queue', 'move', from, 'b', '--to', holder, '--json', ...t]);
      expect(taken.code).toBe(3);
      expect(JSON.parse(taken.stdout)).toEqual({ moved: 0, notMoved: 1 });
      expect(await ready(from)).toEqual(['b']);
      // A target that is not there is refused before anything moves: 1, as for the source.
      const missing = fresh();
      const nowhere = await run(['queue', 'move', from, 'b', '--to', missing, '--json', ...t]);
      expect(nowhere).toMatchObject({ code: 1, stdout: '' });
      expect(nowhere.stderr).toContain(`NOT_FOUND: queue ${missing} (--to) does not exist`);
      expect(await ready(from)).toEqual(['b']);
      const all = await run(['queue', 'move', from, 'b', '--to', to, '--json', ...t]);
      expect(all).toEqual({ code: 0, stdout: '{"moved":1,"notMoved":0}\n', stderr: '' });
      expect(await ready(to)).toEqual(['a', 'b']);
    });
  }

  it('counts against --max when it is fewer than the ids named', async () => {
    const { from, to } = await queuesWithJobs(['a', 'b', 'c']);
    const capped = await run(['queue', 'move', from, 'a', 'b', 'c', '--to', to, '--max', '2']);
    expect(capped).toEqual({ code: 0, stdout: 'moved 2 jobs\n', stderr: '' });
    const short = await run(['queue', 'move', from, 'a', 'c', '--to', to, '--max', '2']);
    expect(short.code).toBe(3);
    expect(short.stdout).toContain('not moved 1 of the 2 jobs named');
  });

  it('exits 0 when nothing is to move without ids, as dead redrive and queue purge with nothing to do', async () => {
    const { from, to } = await queuesWithJobs([]);
    expect(await run(['queue', 'move', from, '--to', to])).toEqual({
      code: 0,
      stdout: 'moved 0 jobs\n',
      stderr: '',
    });
    expect(await run(['queue', 'move', from, '--to', to, '--json'])).toMatchObject({
      code: 0,
      stdout: '{"moved":0}\n',
    });
    expect(await run(['dead', 'redrive', from])).toMatchObject({ code: 0 });
    expect(await run(['queue', 'purge', from])).toMatchObject({ code: 0 });
  });
});
