import { homedir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { loadConfig } from '../../src/server/index.js';

function problems(run: () => unknown): readonly string[] {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).issues;
  }
  throw new Error('expected loadConfig to refuse');
}

describe('loadConfig', () => {
  it('refuses a flag that is not a setting rather than keep the default in silence', () => {
    expect(problems(() => loadConfig({ flags: { storage: 'memory:', prot: '8080' } }))).toEqual([
      'unknown setting "prot" in flags',
    ]);
    // Flags go by setting name: the command line form names the setting it stands for.
    expect(problems(() => loadConfig({ flags: { storage: 'memory:', 'max-batch': '5' } }))).toEqual(
      ['unknown setting "max-batch" in flags (settings go by name here: maxBatch)'],
    );
    // Left out, as a spread of optional values may leave it: nothing given.
    expect(loadConfig({ flags: { storage: 'memory:', prot: undefined } }).port).toBe(7700);
    expect(
      problems(() =>
        loadConfig({ file: { path: 'c.json', text: '{"storage": "memory:", "LEASEQ_PORT": 1}' } }),
      ),
    ).toEqual(['unknown setting "LEASEQ_PORT" in c.json (settings go by name here: port)']);
  });

  it('refuses a SQLite path that starts with a tilde, which no shell expands there', () => {
    const found = problems(() => loadConfig({ env: { LEASEQ_STORAGE: 'sqlite:~/leaseq/q.db' } }));
    expect(found).toEqual([
      `storage: storage URL "sqlite:~/leaseq/q.db": ~ is not expanded in a storage URL (SQLite would take it as a name in the working directory); write the path in full, e.g. sqlite:${homedir()}/leaseq/q.db (from LEASEQ_STORAGE)`,
    ]);
    expect(problems(() => loadConfig({ flags: { storage: 'sqlite:~other/q.db' } }))[0]).toMatch(
      /~ is not expanded/,
    );
    // A name with a tilde that is not at the start is a name like any other.
    expect(loadConfig({ flags: { storage: 'sqlite:./data/~q.db' } }).storage).toBe(
      'sqlite:./data/~q.db',
    );
  });

  it('reads a config file saved with a byte order mark', () => {
    const text = '\uFEFF{"storage": "memory:", "port": 8080}';
    expect(loadConfig({ file: { path: 'c.json', text } })).toMatchObject({
      storage: 'memory:',
      port: 8080,
    });
  });

  it('does not echo the text of a config file that is not JSON, which may hold secrets', () => {
    const secret = 's3cr3t-receipt-secret-of-32-characters';
    for (const text of [
      `{"receiptSecret": '${secret}'}`,
      `{"receiptSecret": ${secret}}`,
      `${secret}`,
    ]) {
      const [issue] = problems(() => loadConfig({ file: { path: 'c.json', text } }));
      expect(issue).toMatch(/^config file c\.json is not JSON: /);
      expect(issue).not.toContain('s3cr3t');
    }
  });

  it('says a config file takes JSON true or false, not the words flags take', () => {
    expect(
      problems(() =>
        loadConfig({ file: { path: 'c.json', text: '{"storage": "memory:", "ui": "on"}' } }),
      ),
    ).toEqual([
      'ui: must be true or false (JSON true or false, without quotes), got "on" (from c.json)',
    ]);
    expect(loadConfig({ flags: { storage: 'memory:', ui: 'on' } }).ui).toBe(true);
  });
});
