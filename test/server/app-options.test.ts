import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { type ApiKeyConfig, createApp } from '../../src/server/index.js';

const SECRET = 'test-secret-of-at-least-32-characters';

async function refusal(options: Record<string, unknown>): Promise<ValidationError> {
  const broker = await open('memory:');
  try {
    await createApp({ broker, receiptSecret: SECRET, ...options });
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  } finally {
    await broker.close();
  }
  throw new Error('createApp accepted options it should refuse');
}

describe('createApp checks its keys and limits as leaseq serve does', () => {
  it('refuses every bad key at once, naming each problem', async () => {
    const keys = [
      { name: 'short', key: 'too-short', allow: [{ queues: '*', actions: ['admin'] }] },
      { name: 'typo', sha265: 'ab'.repeat(32), allow: [{ queues: '*', actions: ['admin'] }] },
      { name: 'no-rights', key: 'a-key-of-enough-length-1' },
    ] as unknown as ApiKeyConfig[];
    const error = await refusal({ keys });
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.issues.join('\n')).toContain('[0].key must be a string of at least 16 characters');
    expect(error.issues.join('\n')).toContain('[1] has an unknown field "sha265"');
    expect(error.issues.join('\n')).toContain('[2].allow must be a non-empty array');
  });

  it('refuses a limit that is none, one out of range, and limits that are no plain object', async () => {
    const error = await refusal({
      limits: {
        maxBatch: 0,
        maxWaitMs: 2.5,
        streamHeartbeatMs: 2 ** 40,
        maxWaitMS: 1000,
        keys: [],
      },
    });
    expect(error.issues).toEqual([
      'limits.maxBatch must be an integer from 1 to 10000, got 0',
      expect.stringMatching(/^limits\.maxWaitMs must be an integer from 0 to \d+, got 2\.5$/),
      expect.stringMatching(
        /^limits\.streamHeartbeatMs must be an integer from \d+ to \d+, got 1099511627776$/,
      ),
      'limits: "maxWaitMS" is not a limit',
      'limits: "keys" is not a limit',
    ]);
    const map = await refusal({ limits: new Map([['maxBatch', 0]]) });
    expect(map.issues).toEqual(['limits must be a plain object of limits by name']);
  });

  it('refuses a list of keys with a hole in it', async () => {
    const key = {
      name: 'ops',
      key: 'ops-key-0123456789',
      allow: [{ queues: '*', actions: ['admin'] }],
    };
    // biome-ignore lint/suspicious/noSparseArray: the hole is what is tested
    const error = await refusal({ keys: [, key] });
    expect(error.issues).toEqual(['keys: [0] must be an object']);
  });

  it('takes good keys and limits, and a limit left undefined keeps its default', async () => {
    const broker = await open('memory:');
    try {
      const app = await createApp({
        broker,
        receiptSecret: SECRET,
        keys: [
          { name: 'ops', key: 'ops-key-0123456789', allow: [{ queues: '*', actions: ['admin'] }] },
        ],
        limits: { maxBatch: 10, maxWaitMs: undefined },
      });
      const answer = await app.inject({
        method: 'PUT',
        url: '/v1/queues/q',
        headers: { authorization: 'Bearer ops-key-0123456789', 'content-type': 'application/json' },
        payload: '{}',
      });
      expect(answer.statusCode).toBe(201);
      const limits = await app.inject({
        method: 'GET',
        url: '/v1/limits',
        headers: { authorization: 'Bearer ops-key-0123456789' },
      });
      expect(limits.statusCode).toBe(200);
      expect(limits.json()).toMatchObject({ maxBatch: 10, maxWaitMs: 20_000 });
      await app.close();
    } finally {
      await broker.close();
    }
  });
});
