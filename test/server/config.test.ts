import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import {
  DEFAULT_CONFIG,
  envName,
  flagName,
  loadConfig,
  SETTINGS,
  startServer,
} from '../../src/server/index.js';

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
  it('uses the defaults: 127.0.0.1:7700 over sqlite:./data/leaseq.db', () => {
    const config = loadConfig({});
    expect(config).toEqual(DEFAULT_CONFIG);
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 7700,
      storage: 'sqlite:./data/leaseq.db',
    });
  });

  it('gives each setting the same name in a file, the environment and flags; flags win, then env', () => {
    const file = {
      path: 'leaseq.json',
      text: JSON.stringify({ port: 1, maxBatch: 5, logLevel: 'warn' }),
    };
    const env = { LEASEQ_PORT: '2', LEASEQ_MAX_BATCH: '6' };
    const flags = { port: '3' };
    expect(loadConfig({ file, env, flags })).toMatchObject({
      port: 3,
      maxBatch: 6,
      logLevel: 'warn',
    });
    expect(loadConfig({ file, env })).toMatchObject({ port: 2, maxBatch: 6 });
    expect(loadConfig({ file })).toMatchObject({ port: 1, maxBatch: 5 });
    expect(flagName('maxPayloadBytes')).toBe('max-payload-bytes');
    expect(envName('maxPayloadBytes')).toBe('LEASEQ_MAX_PAYLOAD_BYTES');
    expect(SETTINGS.map((setting) => setting.name)).toContain('receiptSecret');
  });

  it('reports every wrong setting at once, naming it and where its value came from', () => {
    const found = problems(() =>
      loadConfig({
        file: { path: 'conf.json', text: '{"port": "7700", "prot": 1, "maxWaitMs": -5}' },
        env: { LEASEQ_LOG_LEVEL: 'loud', LEASEQ_RECEIPT_SECRET: 'short' },
        flags: { maxBatch: '1.5', storage: '' },
      }),
    );
    expect(found).toEqual([
      'unknown setting "prot" in conf.json',
      'port: must be an integer from 0 to 65535, got "7700" (from conf.json)',
      'storage: unsupported storage URL "": use memory:, sqlite:path/to.db or postgres://… (from --storage)',
      'receiptSecret: must be a string of at least 32 characters (from LEASEQ_RECEIPT_SECRET)',
      'logLevel: must be one of fatal, error, warn, info, debug, trace, silent, got "loud" (from LEASEQ_LOG_LEVEL)',
      'maxBatch: must be an integer from 1 to 10000, got "1.5" (from --max-batch)',
      'maxWaitMs: must be an integer from 0 to 300000, got -5 (from conf.json)',
    ]);
  });

  it('checks the storage URL with the other settings, before opening anything', () => {
    const storage = (value: string) =>
      problems(() => loadConfig({ env: { LEASEQ_STORAGE: value } }));
    expect(storage('memroy:')).toEqual([
      'storage: unsupported storage URL "memroy:": use memory:, sqlite:path/to.db or postgres://… (from LEASEQ_STORAGE)',
    ]);
    // A server stores in an engine, never in another server.
    expect(storage('http://h:7700')).toEqual([
      'storage: storage URL "http://h:7700" names a leaseq server, and a server cannot store in another server: use memory:, sqlite:path/to.db or postgres://… (from LEASEQ_STORAGE)',
    ]);
    expect(storage('HTTPS://u:secret@h')[0]).toContain('"HTTPS://u:***@h" names a leaseq server');
    expect(storage('sqlite:')[0]).toContain('sqlite: needs a file path');
    // sqlite://x.db would be /x.db, at the root of the file system.
    expect(storage('sqlite://x.db')[0]).toContain('a SQLite URL is sqlite: and a path');
    expect(storage('postgres://user:secret@h:99999/db')).toEqual([
      'storage: storage URL "postgres://user:***@h:99999/db" is not a valid URL (host, port 1 to 65535, database) (from LEASEQ_STORAGE)',
    ]);
    for (const good of ['memory:', 'sqlite:./x.db', 'postgres://u@h:5432/db']) {
      expect(loadConfig({ env: { LEASEQ_STORAGE: good } }).storage).toBe(good);
    }
  });

  it('refuses a durability given for a storage it does not apply to; the default goes unsaid', () => {
    expect(
      problems(() =>
        loadConfig({
          flags: { durability: 'os' },
          env: { LEASEQ_STORAGE: 'postgres://u:secret@h:5432/db' },
        }),
      ),
    ).toEqual([
      'durability: applies to SQLite storage only, and storage is postgres://u:***@h:5432/db (from --durability)',
    ]);
    expect(
      problems(() =>
        loadConfig({ env: { LEASEQ_STORAGE: 'memory:', LEASEQ_DURABILITY: 'fsync' } }),
      ),
    ).toHaveLength(1);
    expect(loadConfig({ env: { LEASEQ_STORAGE: 'memory:' } }).durability).toBe('fsync');
    expect(loadConfig({ flags: { durability: 'os', storage: 'sqlite:./x.db' } }).durability).toBe(
      'os',
    );
  });

  it('refuses a server as the storage in startServer too, naming the setting', async () => {
    await expect(
      startServer({ ...DEFAULT_CONFIG, storage: 'http://h:7700', port: 0 }),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining(
        'storage: storage URL "http://h:7700" names a leaseq server',
      ),
    });
  });

  it('checks the SQS settings in the forms SQS uses, whether or not SQS is on', () => {
    expect(
      problems(() =>
        loadConfig({
          flags: { sqsBaseUrl: 'not a url', sqsAccountId: 'x y', sqsRegion: ' ' },
        }),
      ),
    ).toEqual([
      'sqsBaseUrl: must be an http(s) URL without a query, fragment, credentials or trailing /, e.g. https://queues.example.com, got "not a url" (from --sqs-base-url)',
      'sqsRegion: must be a region such as us-east-1, got " " (from --sqs-region)',
      'sqsAccountId: must be an account id of 12 digits, got "x y" (from --sqs-account-id)',
    ]);
    for (const base of ['ftp://h', 'https://h/', 'https://h?x=1', 'https://u:p@h']) {
      expect(problems(() => loadConfig({ env: { LEASEQ_SQS_BASE_URL: base } }))).toHaveLength(1);
    }
    expect(
      problems(() => loadConfig({ env: { LEASEQ_SQS_BASE_URL: 'https://u:secret@h' } }))[0],
    ).not.toContain('secret');
    for (const region of ['US-EAST-1', 'us-east', 'useast1']) {
      expect(problems(() => loadConfig({ env: { LEASEQ_SQS_REGION: region } }))).toHaveLength(1);
    }
    expect(
      problems(() => loadConfig({ env: { LEASEQ_SQS_ACCOUNT_ID: '12345678901' } })),
    ).toHaveLength(1);
    expect(
      loadConfig({
        flags: {
          sqs: 'on',
          sqsBaseUrl: 'https://queues.example.com/prefix',
          sqsRegion: 'us-gov-west-1',
          sqsAccountId: '123456789012',
        },
      }),
    ).toMatchObject({
      sqsBaseUrl: 'https://queues.example.com/prefix',
      sqsRegion: 'us-gov-west-1',
      sqsAccountId: '123456789012',
    });
  });

  it('refuses a config file that is not a JSON object', () => {
    expect(problems(() => loadConfig({ file: { path: 'x.json', text: '[1]' } }))).toEqual([
      'config file x.json must hold a JSON object',
    ]);
    expect(problems(() => loadConfig({ file: { path: 'x.json', text: '{' } }))[0]).toMatch(
      /^config file x\.json is not JSON/,
    );
  });

  it('checks API keys field by field', () => {
    const keys = JSON.stringify([
      { name: 'a', key: 'short', allow: [{ queues: '*', actions: ['publish'] }] },
      { name: 'b', sha256: 'abc', allow: [] },
      {
        name: '',
        key: 'k'.repeat(20),
        sha256: 'f'.repeat(64),
        allow: [{ queues: 'a b', actions: ['write'] }],
        role: 1,
      },
    ]);
    expect(problems(() => loadConfig({ env: { LEASEQ_KEYS: keys } }))).toEqual([
      'keys: [0].key must be a string of at least 16 characters; [1].sha256 must be 64 hex digits; [1].allow must be a non-empty array of { queues, actions }; [2] has an unknown field "role"; [2].name must be a non-empty string; [2] needs exactly one of key and sha256; [2].allow[0].queues must be a queue name pattern (letters, digits, _ . - and *); [2].allow[0].actions must be a non-empty array of read, publish, consume, admin (from LEASEQ_KEYS)',
    ]);
  });

  it('refuses two keys with one secret (as a key or its sha256), or one name', () => {
    const grant = [{ queues: '*', actions: ['consume'] }];
    const secret = 'b'.repeat(20);
    const digest = createHash('sha256').update(secret).digest('hex').toUpperCase();
    const keys = JSON.stringify([
      { name: 'worker', key: secret, allow: grant },
      { name: 'admin', key: secret, allow: [{ queues: '*', actions: ['admin'] }] },
      { name: 'ops', sha256: digest, allow: grant },
      { name: 'worker', key: 'c'.repeat(20), allow: grant },
    ]);
    expect(problems(() => loadConfig({ env: { LEASEQ_KEYS: keys } }))).toEqual([
      'keys: [1] has the same secret as [0]: give each key its own; [2] has the same secret as [0]: give each key its own; [3].name "worker" is the name of [0] too (from LEASEQ_KEYS)',
    ]);
  });

  it('keeps the body limit above one job of the largest payload', () => {
    expect(
      problems(() => loadConfig({ flags: { maxPayloadBytes: '4096', maxBodyBytes: '4096' } })),
    ).toEqual([
      'maxBodyBytes: 4096 (from --max-body-bytes) must be at least maxPayloadBytes + 1024 (5120; maxPayloadBytes 4096 from --max-payload-bytes) so that one job of the largest payload fits',
    ]);
    // The body limit left at its default: the setting given is named as the cause's source.
    expect(problems(() => loadConfig({ env: { LEASEQ_MAX_PAYLOAD_BYTES: '2000000' } }))).toEqual([
      'maxBodyBytes: 1048576 (from the default) must be at least maxPayloadBytes + 1024 (2001024; maxPayloadBytes 2000000 from LEASEQ_MAX_PAYLOAD_BYTES) so that one job of the largest payload fits',
    ]);
  });

  it('keeps the headers timeout within the time a whole request may take', () => {
    expect(
      problems(() => loadConfig({ flags: { headersTimeoutMs: '40000', maxWaitMs: '20000' } })),
    ).toEqual([
      'headersTimeoutMs: 40000 (from --headers-timeout-ms) must be at most maxWaitMs + 15000 (35000; maxWaitMs 20000 from --max-wait-ms), the time a whole request may take',
    ]);
    expect(problems(() => loadConfig({ env: { LEASEQ_HEADERS_TIMEOUT_MS: '36000' } }))).toEqual([
      'headersTimeoutMs: 36000 (from LEASEQ_HEADERS_TIMEOUT_MS) must be at most maxWaitMs + 15000 (35000; maxWaitMs 20000 from the default), the time a whole request may take',
    ]);
    expect(loadConfig({ flags: { headersTimeoutMs: '35000' } }).headersTimeoutMs).toBe(35_000);
  });

  it('reports refused keys on a non-loopback host as refused, not as no keys configured', () => {
    const file = {
      path: 'leaseq.json',
      text: JSON.stringify({
        host: '0.0.0.0',
        keys: [{ name: 'ops', sha256: 'not hex', allow: [{ queues: '*', actions: ['admin'] }] }],
      }),
    };
    expect(problems(() => loadConfig({ file }))).toEqual([
      'keys: [0].sha256 must be 64 hex digits (from leaseq.json)',
    ]);
  });

  it('refuses a host in the form of a URL, naming the setting, before anything listens', () => {
    const host = (value: string) => problems(() => loadConfig({ flags: { host: value } }));
    const form = 'must be an IP address or host name, without brackets or a port (::1, not [::1])';
    // As the server writes its own URL: not said to be other than loopback, nor left to listen.
    expect(host('[::1]')).toEqual([`host: ${form}, got "[::1]" (from --host)`]);
    expect(host('127.0.0.1:7700')).toEqual([`host: ${form}, got "127.0.0.1:7700" (from --host)`]);
    for (const good of ['127.0.0.1', '::1', 'localhost']) {
      expect(loadConfig({ flags: { host: good } }).host).toBe(good);
    }
  });

  it('takes every spelling of a loopback address for loopback on a server without keys', () => {
    for (const loopback of [
      'LOCALHOST',
      '127.1',
      '0:0:0:0:0:0:0:1',
      '::ffff:127.0.0.1',
      '::FFFF:7f00:1',
    ]) {
      expect(loadConfig({ flags: { host: loopback } }).host).toBe(loopback);
    }
    for (const other of ['0.0.0.0', '::', '127.example.com', '::ffff:10.0.0.1', 'fe80::1%lo']) {
      expect(problems(() => loadConfig({ flags: { host: other } }))).toEqual([
        `host: ${other} is not a loopback address and no API keys are configured; configure keys or listen on 127.0.0.1 (from --host)`,
      ]);
    }
  });

  it('leaves out the body limit check when a limit it compares was refused', () => {
    expect(
      problems(() => loadConfig({ flags: { maxPayloadBytes: 'x', maxBodyBytes: '2000' } })),
    ).toEqual([
      'maxPayloadBytes: must be an integer from 1 to 67108864, got "x" (from --max-payload-bytes)',
    ]);
  });

  it('leaves out the durability check when the storage it judges was refused', () => {
    const file = { path: 'leaseq.json', text: JSON.stringify({ storage: 'postgres://h/db' }) };
    expect(
      problems(() => loadConfig({ file, flags: { storage: 'sqlit:./x.db', durability: 'os' } })),
    ).toEqual([
      'storage: unsupported storage URL "sqlit:./x.db": use memory:, sqlite:path/to.db or postgres://… (from --storage)',
    ]);
  });

  it('refuses an API key a Bearer header can never carry: whitespace, control or non-ASCII characters', () => {
    const grant = [{ queues: '*', actions: ['admin'] }];
    const keys = JSON.stringify([
      { name: 'space', key: 'a key with spaces 0123456789', allow: grant },
      { name: 'tab', key: 'tabbed\tkey-0123456789', allow: grant },
      { name: 'edge', key: ' leading-space-0123456789', allow: grant },
      { name: 'accent', key: 'clé-secrète-0123456789', allow: grant },
      { name: 'fine', key: 'Fine_key-0123456789!~', allow: grant },
    ]);
    const rule =
      'must be printable ASCII without spaces (letters, digits and punctuation), as an Authorization: Bearer header carries it';
    expect(problems(() => loadConfig({ env: { LEASEQ_KEYS: keys } }))).toEqual([
      `keys: [0].key ${rule}; [1].key ${rule}; [2].key ${rule}; [3].key ${rule} (from LEASEQ_KEYS)`,
    ]);
  });
});

describe('loadConfig: what a user gets wrong', () => {
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

  it('says on which line a config file stops being JSON, without quoting it', () => {
    const issue = (text: string) =>
      problems(() => loadConfig({ file: { path: 'c.json', text } }))[0];
    // An unexpected token, for which V8 gives no position, only the text around it.
    const stray = issue(
      '{\n  "port": 7700,\n  "host": "0.0.0.0",\n  "maxBatch": 100,\n  "ui": nope\n}',
    );
    expect(stray).toMatch(/\(line 5\)$/);
    expect(stray).not.toContain('0.0.0.0');
    // A missing comma, for which it gives a position.
    expect(issue('{\n  "port": 7700\n  "host": "0.0.0.0"\n}')).toMatch(/\(line 3\)$/);
    expect(issue('\uFEFF{"a": nope}')).toMatch(/\(line 1\)$/);
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
