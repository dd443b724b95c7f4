import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// `leaseq queue move <queue> --to <name>` where no queue has that name: the engines leave the
// jobs where they are (R26), so the move would answer 0 and pass for one with nothing to do. A
// mistyped target is an error of the command, as a mistyped source is, and nothing moves.

let server: TestServer;
let env: Record<string, string>;
let counter = 0;
const fresh = () => `target${++counter}`;
const run = (argv: string[]) => leaseq(argv, { env });

beforeAll(async () => {
  server = await startTestServer();
  env = { LEASEQ_SERVER: server.baseUrl };
});

afterAll(async () => {
  await server.close();
});

async function queueWithJobs(ids: string[]): Promise<string> {
  const name = fresh();
  const queue = await server.broker.queue(name);
  for (const id of ids) await queue.publish({ id });
  return name;
}

async function ready(name: string): Promise<string[]> {
  return [...(await (await server.broker.queue(name)).inspect()).ready];
}

async function queueNames(): Promise<string[]> {
  return (await server.broker.listQueues()).map((info) => info.name);
}

describe('leaseq queue move to a queue that does not exist', () => {
  for (const transport of ['stream', 'http']) {
    it(`exits 1 naming the missing target and moves nothing, with or without ids (${transport})`, async () => {
      const from = await queueWithJobs(['a', 'b']);
      const typo = `${from}-typo`;
      const t = ['--transport', transport];
      for (const argv of [
        ['queue', 'move', from, '--to', typo, ...t],
        ['queue', 'move', from, '--to', typo, '--json', ...t],
        ['queue', 'move', from, 'a', '--to', typo, ...t],
        ['queue', 'move', from, 'a', 'b', '--to', typo, '--max', '1', '--json', ...t],
      ]) {
        const answer = await run(argv);
        expect(answer, argv.join(' ')).toEqual({
          code: 1,
          stdout: '',
          stderr: `leaseq queue move: NOT_FOUND: queue ${typo} (--to) does not exist: nothing was moved (create it first, or name another)\n`,
        });
      }
      expect(await ready(from)).toEqual(['a', 'b']);
      expect(await queueNames()).not.toContain(typo);
    });
  }

  it('still moves to a target that exists, and says a missing source as before', async () => {
    const from = await queueWithJobs(['a']);
    const to = await queueWithJobs([]);
    expect(await run(['queue', 'move', from, '--to', to])).toEqual({
      code: 0,
      stdout: 'moved 1 job\n',
      stderr: '',
    });
    expect(await ready(to)).toEqual(['a']);
    const missing = await run(['queue', 'move', `${from}-gone`, '--to', to]);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toContain(`NOT_FOUND: queue ${from}-gone does not exist`);
  });

  it('leaves a key without the right on the target to the refusal of the move, whether it exists or not', async () => {
    const guarded = await startTestServer({
      keys: [
        {
          name: 'mover',
          key: 'mover-key-0123456789',
          allow: [{ queues: 'from', actions: ['admin'] }],
        },
      ],
    });
    try {
      await (await guarded.broker.queue('from')).publish({ id: 'a' });
      await guarded.broker.queue('closed');
      const keyed = { LEASEQ_SERVER: guarded.baseUrl, LEASEQ_API_KEY: 'mover-key-0123456789' };
      for (const target of ['closed', 'absent']) {
        const answer = await leaseq(['queue', 'move', 'from', '--to', target], { env: keyed });
        expect(answer, target).toMatchObject({ code: 1, stdout: '' });
        expect(answer.stderr, target).toContain(
          `leaseq queue move: FORBIDDEN: this key may not publish on queue ${target}\n`,
        );
      }
      expect([...(await (await guarded.broker.queue('from')).inspect()).ready]).toEqual(['a']);
    } finally {
      await guarded.close();
    }
  });

  it('refuses --to naming the queue moved from as a usage error, moving nothing', async () => {
    const from = await queueWithJobs(['a', 'b']);
    for (const argv of [
      ['queue', 'move', from, '--to', from],
      ['queue', 'move', from, 'a', '--to', from, '--json'],
    ]) {
      expect(await run(argv), argv.join(' ')).toEqual({
        code: 2,
        stdout: '',
        stderr: `leaseq queue move: --to names ${from}, the queue the jobs are in: name another queue\nsee leaseq queue move --help\n`,
      });
    }
    expect(await ready(from)).toEqual(['a', 'b']);
  });
});
