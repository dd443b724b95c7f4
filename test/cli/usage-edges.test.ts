import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/run.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

const KEY = 'admin-key-0123456789';
let open: TestServer;
let keyed: TestServer;

beforeAll(async () => {
  open = await startTestServer();
  keyed = await startTestServer({
    keys: [{ name: 'admin', key: KEY, allow: [{ queues: '*', actions: ['admin'] }] }],
  });
});

afterAll(async () => {
  await open.close();
  await keyed.close();
});

describe('help of a group of commands', () => {
  it('lists the commands of the group for leaseq queue --help, -h and leaseq help queue', async () => {
    const names = COMMANDS.filter((command) => command.name.startsWith('queue ')).map(
      (command) => command.name,
    );
    for (const argv of [
      ['queue', '--help'],
      ['queue', '-h'],
      ['help', 'queue'],
    ]) {
      const run = await leaseq(argv);
      expect(run, argv.join(' ')).toMatchObject({ code: 0, stderr: '' });
      for (const name of names) expect(run.stdout).toContain(`  ${name}  `);
      expect(run.stdout).not.toMatch(/^ {2}publish /m);
    }
    expect((await leaseq(['dead', '--help'])).stdout).toContain('dead redrive');
    // Without --help, a group alone is still a command line to complete.
    expect(await leaseq(['queue'])).toMatchObject({ code: 2, stdout: '' });
    expect(await leaseq(['help', 'nope'])).toMatchObject({ code: 2, stdout: '' });
  });

  it('has one blank line before the server options, for a command without lines of its own', async () => {
    for (const command of COMMANDS) {
      const help = await leaseq([...command.name.split(' '), '--help']);
      expect(help.stdout, command.name).not.toContain('\n\n\n');
    }
  });
});

describe('the API key of the command line', () => {
  const env = () => ({ LEASEQ_SERVER: keyed.baseUrl });

  it('refuses a key with a line break as a usage error, naming where it came from, key unshown', async () => {
    const fromEnv = await leaseq(['queue', 'list'], {
      env: { ...env(), LEASEQ_API_KEY: `${KEY}\n` },
    });
    expect(fromEnv).toMatchObject({ code: 2, stdout: '' });
    expect(fromEnv.stderr).toMatch(
      /^leaseq queue list: LEASEQ_API_KEY is not an API key: [^\n]*line break/,
    );
    expect(fromEnv.stderr).not.toContain(KEY);
    expect(fromEnv.stderr).not.toContain('STORAGE_UNAVAILABLE');
    const fromFlag = await leaseq(
      ['ack', 'q', 'receipt', '--transport', 'http', '--api-key', `${KEY}\r`],
      { env: env() },
    );
    expect(fromFlag).toMatchObject({ code: 2, stdout: '' });
    expect(fromFlag.stderr).toMatch(/^leaseq ack: --api-key is not an API key: /);
  });

  it('refuses an empty --api-key, a control character and a character outside ASCII', async () => {
    for (const key of ['', `${KEY}\u0001`, `${KEY}é`, 'two words-0123456789']) {
      const run = await leaseq(['queue', 'stats', 'q', '--api-key', key], { env: env() });
      expect(run, JSON.stringify(key)).toMatchObject({ code: 2, stdout: '' });
      expect(run.stderr).toMatch(/^leaseq queue stats: --api-key is not an API key: /);
    }
    // A LEASEQ_API_KEY left blank is no key, as before: the server asks for one.
    const blank = await leaseq(['queue', 'list'], { env: { ...env(), LEASEQ_API_KEY: '' } });
    expect(blank).toMatchObject({ code: 1, stderr: expect.stringContaining('UNAUTHENTICATED') });
    // The key as it should be.
    const good = await leaseq(['queue', 'create', 'keyed', '--api-key', KEY], { env: env() });
    expect(good).toMatchObject({ code: 0 });
  });
});

describe('queue list', () => {
  it('says on stderr that there are no queues, as dead list and schedule list do', async () => {
    const env = { LEASEQ_SERVER: open.baseUrl };
    expect(await leaseq(['queue', 'list'], { env })).toEqual({
      code: 0,
      stdout: '',
      stderr: 'no queues\n',
    });
    expect(await leaseq(['queue', 'list', '--json'], { env })).toEqual({
      code: 0,
      stdout: '[]\n',
      stderr: '',
    });
  });
});
