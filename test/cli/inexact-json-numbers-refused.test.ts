import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// R18: JSON text holding a number JSON.parse would not keep exactly is refused rather than
// stored changed. The CLI reads JSON text (payload arguments, lines of publish --file, a
// schedule's --payload) as the server reads a body: 1e400 is not sent as null, 1e-400 not as 0.

let server: TestServer;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer();
  env = { LEASEQ_SERVER: server.baseUrl };
  await server.broker.queue('numbers');
});

afterAll(async () => {
  await server.close();
});

async function readyCount(): Promise<number> {
  return (await (await server.broker.queue('numbers')).stats()).ready;
}

describe('a number the JSON it came in would not keep', () => {
  for (const [number, why] of [
    ['1e400', 'beyond the doubles'],
    ['-1e400', 'beyond the doubles'],
    ['1e-400', 'too small for a double'],
    ['12345678901234567890', 'a whole number beyond 2^53 - 1'],
  ] as const) {
    it(`is refused as a payload argument (${number}), publishing none of the arguments`, async () => {
      const run = await leaseq(['publish', 'numbers', '{"ok":1}', `[${number}]`], { env });
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(`payload 2 holds ${number}, `);
      expect(run.stderr).toContain(why);
      expect(await readyCount()).toBe(0);
    });
  }

  it('is refused on a line of publish --file with its batch, quoted as written', async () => {
    const stdin = '{"id":"a","payload":1}\n{"id":"b","payload":{"n":[2,1e309]}}\n';
    const run = await leaseq(['publish', 'numbers', '--file', '-'], { env, stdin });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('line 2 holds 1e309, beyond the doubles');
    expect(run.stderr).toContain('0 jobs were published before it');
    expect(await readyCount()).toBe(0);
  });

  it('is refused in a job field of a line, not read as another number', async () => {
    const stdin = '{"id":"c","delay":1e-400}\n';
    const run = await leaseq(['publish', 'numbers', '--file', '-'], { env, stdin });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('line 1 holds 1e-400, which is not 0 but too small');
    expect(await readyCount()).toBe(0);
  });

  it('is refused as a schedule --payload, setting nothing', async () => {
    const argv = ['schedule', 'set', 'numbers', 'tick', '--every', '60000', '--payload', '[1e400]'];
    const run = await leaseq(argv, { env });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--payload holds 1e400, beyond the doubles');
    expect(await (await server.broker.queue('numbers')).schedules()).toEqual([]);
  });
});
