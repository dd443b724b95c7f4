import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

/**
 * R18: a number JSON.parse would not keep as it was written is refused, never stored changed,
 * and the refusal quotes it as the client sent it. A query parameter given twice is said so.
 */
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
  await call(server.baseUrl, 'PUT', '/v1/queues/numbers', { body: {} });
});

afterAll(async () => {
  await server.close();
});

const publish = (raw: string) => call(server.baseUrl, 'POST', '/v1/queues/numbers/jobs', { raw });

async function stored(id: string): Promise<unknown> {
  return (await call(server.baseUrl, 'GET', `/v1/queues/numbers/jobs/${id}`)).body.payload;
}

describe('payload numbers too small for a double (they would be stored as 0)', () => {
  const zeros = '0'.repeat(400);
  for (const [written, quoted] of [
    ['1e-400', '1e-400'],
    ['-1e-400', '-1e-400'],
    ['2e-324', '2e-324'],
    ['100E-326', '100E-326'],
    [`0.${zeros}1`, `0.${'0'.repeat(30)}… (403 characters)`],
  ] as const) {
    it(`refuses ${written.slice(0, 24)}, quoting it as sent`, async () => {
      const id = `tiny-${written.length}-${written.slice(0, 6)}`;
      const answer = await publish(`{"id":"${id}","payload":{"ok":0,"x":${written}}}`);
      expect(answer.status).toBe(400);
      expect(answer.body.error.code).toBe('INVALID_ARGUMENT');
      expect(answer.body.error.message).toBe(
        `the body holds ${quoted}, which is not 0 but too small for a double and reads as 0: to be kept exactly, a number must be finite, not too small to tell from 0 and, when whole, at most 2^53 - 1 in magnitude; send others as strings`,
      );
      expect((await call(server.baseUrl, 'GET', `/v1/queues/numbers/jobs/${id}`)).status).toBe(404);
    });
  }

  it('keeps ordinary numbers, zeros written as zeros, the smallest doubles and number-like text', async () => {
    const raw =
      '{"id":"fine","payload":[0.1,1e-300,5e-324,-5e-324,3e-324,0,-0,0.0,0e-400,-0.0e5,' +
      `1.5,"1e-400","\\"1e-400",{"k\\"":0,"1e-400":1e-300}]}`;
    const answer = await publish(raw);
    expect(answer.status).toBe(200);
    expect(await stored('fine')).toEqual([
      0.1,
      1e-300,
      5e-324,
      -5e-324,
      5e-324,
      0,
      0,
      0,
      0,
      0,
      1.5,
      '1e-400',
      '"1e-400',
      { 'k"': 0, '1e-400': 1e-300 },
    ]);
  });
});

describe('the refusal of a number beyond what JSON.parse keeps quotes the text the client sent', () => {
  it('a whole number beyond 2^53 - 1: 123456789012345678, not 123456789012345680', async () => {
    const answer = await publish('{"id":"big","payload":{"n":123456789012345678}}');
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toBe(
      'the body holds 123456789012345678, a whole number beyond 2^53 - 1: to be kept exactly, a number must be finite, not too small to tell from 0 and, when whole, at most 2^53 - 1 in magnitude; send others as strings',
    );
  });

  it('one beyond the doubles: 1e400', async () => {
    const answer = await publish('{"id":"huge","payload":[1,-1e400]}');
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toMatch(
      /^the body holds -1e400, beyond the doubles \(±1\.8e308\): /,
    );
  });

  it('a long one is cut short', async () => {
    const digits = '9'.repeat(100);
    const answer = await publish(`{"id":"long","payload":${digits}}`);
    expect(answer.body.error.message).toMatch(
      new RegExp(`^the body holds ${'9'.repeat(32)}… \\(100 characters\\), a whole number beyond`),
    );
  });
});

describe('a query parameter given more than once', () => {
  it('is refused as given twice, not as "must be string"', async () => {
    const answer = await call(server.baseUrl, 'GET', '/v1/queues/numbers/inspect?limit=1&limit=2');
    expect(answer.status).toBe(400);
    expect(answer.body.error).toEqual({
      code: 'INVALID_ARGUMENT',
      message: 'querystring.limit is given twice; give it once',
    });
  });

  it('three times', async () => {
    const answer = await call(
      server.baseUrl,
      'GET',
      '/v1/queues/numbers/dead-letters?limit=1&after=x&limit=2&limit=3',
    );
    expect(answer.body.error).toEqual({
      code: 'INVALID_ARGUMENT',
      message: 'querystring.limit is given 3 times; give it once',
    });
  });

  it('one the route does not name is unknown, however often it is given', async () => {
    const answer = await call(server.baseUrl, 'GET', '/v1/queues/numbers/stats?x=1&x=2');
    expect(answer.body.error).toEqual({
      code: 'INVALID_ARGUMENT',
      message: 'querystring has an unknown field "x"',
    });
  });
});
