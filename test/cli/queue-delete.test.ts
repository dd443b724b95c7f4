import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { serverStorages } from '../server/storages.js';
import { leaseq } from './context.js';

// `leaseq queue delete <name>`: DELETE /v1/queues/{name}, as the dashboard does. It asks
// nothing first, as queue purge; a queue that is not there is an error (exit 1), as for queue
// stats and queue purge.

const storages = (await serverStorages()).filter((storage) => storage.name !== 'postgres');
const servers: TestServer[] = [];

afterAll(async () => {
  for (const server of servers) await server.close();
});

let counter = 0;
const fresh = () => `deleted${++counter}`;

for (const storage of storages) {
  describe(`leaseq queue delete on ${storage.name}`, () => {
    it('deletes a queue with its jobs, dead ones and schedules, and says so', async () => {
      const server = await startTestServer({ url: storage.url });
      servers.push(server);
      const env = { LEASEQ_SERVER: server.baseUrl };
      const name = fresh();
      await leaseq(['queue', 'create', name], { env });
      const queue = await server.broker.queue(name);
      await queue.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      const [held] = await queue.receive();
      await queue.nack(held?.token as number, { requeue: false });
      await queue.schedule('nightly', '0 3 * * *');
      const [leased] = await queue.receive();
      expect(await queue.stats()).toMatchObject({ ready: 1, active: 1, dead: 1 });
      expect(await queue.schedules()).toHaveLength(1);

      expect(await leaseq(['queue', 'delete', name], { env })).toEqual({
        code: 0,
        stdout: `deleted ${name}\n`,
        stderr: '',
      });
      expect((await server.broker.listQueues()).map((each) => each.name)).not.toContain(name);
      // Made again under its name, it holds nothing of the one deleted.
      const again = await server.broker.queue(name);
      expect(await again.stats()).toMatchObject({ ready: 0, active: 0, dead: 0 });
      expect(await again.schedules()).toEqual([]);
      expect(await again.ack(leased?.token as number)).toBe(false);
    });

    it('prints {name, deleted} with --json, over either transport', async () => {
      const server = await startTestServer({ url: storage.url });
      servers.push(server);
      const env = { LEASEQ_SERVER: server.baseUrl };
      for (const transport of ['stream', 'http']) {
        const name = fresh();
        await server.broker.queue(name);
        const run = await leaseq(['queue', 'delete', name, '--json', '--transport', transport], {
          env,
        });
        expect(run).toEqual({ code: 0, stdout: `{"name":"${name}","deleted":true}\n`, stderr: '' });
      }
    });

    it('exits 1 for a queue that is not there, as queue stats and queue purge do', async () => {
      const server = await startTestServer({ url: storage.url });
      servers.push(server);
      const env = { LEASEQ_SERVER: server.baseUrl };
      const name = fresh();
      const said = `NOT_FOUND: queue ${name} does not exist\n`;
      for (const command of ['stats', 'purge', 'delete']) {
        expect(await leaseq(['queue', command, name], { env }), command).toEqual({
          code: 1,
          stdout: '',
          stderr: `leaseq queue ${command}: ${said}`,
        });
      }
      // With --json too: an error of a whole command is text on stderr.
      expect(await leaseq(['queue', 'delete', name, '--json'], { env })).toEqual({
        code: 1,
        stdout: '',
        stderr: `leaseq queue delete: ${said}`,
      });
      // Deleted twice: the second finds none.
      await server.broker.queue(name);
      expect((await leaseq(['queue', 'delete', name], { env })).code).toBe(0);
      expect((await leaseq(['queue', 'delete', name], { env })).code).toBe(1);
    });
  });
}

describe('leaseq queue delete and its command line', () => {
  it('refuses a missing or malformed name as a usage error (exit 2), nothing deleted', async () => {
    const server = await startTestServer();
    servers.push(server);
    const env = { LEASEQ_SERVER: server.baseUrl };
    await server.broker.queue('kept');
    const missing = await leaseq(['queue', 'delete'], { env });
    expect(missing).toMatchObject({ code: 2, stdout: '' });
    expect(missing.stderr).toContain('leaseq queue delete: missing <name>');
    const two = await leaseq(['queue', 'delete', 'kept', 'other'], { env });
    expect(two).toMatchObject({ code: 2, stdout: '' });
    const malformed = await leaseq(['queue', 'delete', 'no/such'], { env });
    expect(malformed).toMatchObject({ code: 2, stdout: '' });
    expect(malformed.stderr).toMatch(/^leaseq queue delete: INVALID_ARGUMENT: /);
    expect((await server.broker.listQueues()).map((each) => each.name)).toEqual(['kept']);
  });

  it('needs an admin key: another is refused (exit 1) and the queue stays', async () => {
    const server = await startTestServer({
      keys: [
        {
          name: 'admin',
          key: 'admin-key-0123456789',
          allow: [{ queues: '*', actions: ['admin'] }],
        },
        {
          name: 'worker',
          key: 'worker-key-0123456789',
          allow: [{ queues: '*', actions: ['publish', 'consume'] }],
        },
      ],
    });
    servers.push(server);
    await server.broker.queue('guarded');
    const env = { LEASEQ_SERVER: server.baseUrl };
    const refused = await leaseq(['queue', 'delete', 'guarded'], {
      env: { ...env, LEASEQ_API_KEY: 'worker-key-0123456789' },
    });
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toContain('leaseq queue delete: FORBIDDEN: ');
    expect(refused.stderr).toContain('this API key lacks the right');
    expect((await server.broker.listQueues()).map((each) => each.name)).toEqual(['guarded']);
    const done = await leaseq(['queue', 'delete', 'guarded'], {
      env: { ...env, LEASEQ_API_KEY: 'admin-key-0123456789' },
    });
    expect(done).toMatchObject({ code: 0, stdout: 'deleted guarded\n' });
  });

  it('is listed with the queue commands, and its help says what goes and that nothing asks first', async () => {
    expect((await leaseq(['queue', '--help'])).stdout).toMatch(
      /^ {2}queue delete +Delete a queue with all it holds/m,
    );
    expect((await leaseq(['--help'])).stdout).toContain('  queue delete ');
    const help = await leaseq(['queue', 'delete', '--help']);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toContain('usage: leaseq queue delete <name>');
    expect(help.stdout).toContain('Nothing asks first, as for queue purge');
    expect(help.stdout).toContain('Needs an admin key.');
  });
});
