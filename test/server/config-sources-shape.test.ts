import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { type ConfigSources, loadConfig } from '../../src/server/index.js';

/** The issues of the ValidationError `loadConfig` throws for these sources. */
function issues(sources: unknown): readonly string[] {
  try {
    loadConfig(sources as ConfigSources);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).issues;
  }
  throw new Error('expected loadConfig to refuse');
}

describe('loadConfig refuses sources of another shape, typed', () => {
  it('a file given as its text alone, naming the shape it takes and none of the text', () => {
    const text = '{"receiptSecret": "a-secret-of-at-least-32-characters!!"}';
    const found = issues({ file: text });
    expect(found).toEqual([expect.stringContaining('file must be { path, text }')]);
    expect(found.join('\n')).not.toContain('a-secret');
  });

  it('a file without its path, or with text that is not a string', () => {
    expect(issues({ file: { text: '{}' } })).toEqual([
      expect.stringContaining('file must be { path, text }'),
    ]);
    expect(issues({ file: { path: 'leaseq.json', text: Buffer.from('{}') } })).toEqual([
      expect.stringContaining('file must be { path, text }'),
    ]);
  });

  it('a misspelt source, rather than settings left at their defaults', () => {
    expect(issues({ flag: { maxBatch: '5' } })).toEqual([
      'unknown source "flag": loadConfig reads flags, env and file',
    ]);
  });

  it('flags or env that are not objects, and no sources object at all', () => {
    expect(issues({ flags: 'maxBatch=5', env: 7 })).toEqual([
      'flags must be an object of values by name, got a value of type string',
      'env must be an object of values by name, got a value of type number',
    ]);
    expect(issues(undefined)).toEqual([
      'loadConfig takes an object { flags?, env?, file? }, got a value of type undefined',
    ]);
  });

  it('still reads sources of the documented shape', () => {
    const config = loadConfig({
      file: { path: 'leaseq.json', text: '{"maxBatch": 9}' },
      env: { LEASEQ_PORT: '0' },
      flags: { storage: 'memory:' },
    });
    expect(config).toMatchObject({ maxBatch: 9, port: 0, storage: 'memory:' });
  });

  it('takes null flags or env as no source, as it always did', () => {
    const sources = { flags: null, env: null } as unknown as ConfigSources;
    expect(loadConfig(sources)).toMatchObject({ maxBatch: loadConfig({}).maxBatch });
  });
});
