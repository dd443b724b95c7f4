import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { open } from '../../src/index.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { leaseq } from './context.js';

const dir = temporaryDirectory('leaseq-rotate-');

describe('leaseq secret rotate', () => {
  it('replaces the stored receipt secret and keeps the previous one valid for --grace-ms', async () => {
    const storage = `sqlite:${join(dir, 'leaseq.db')}`;
    const broker = await open(storage);
    const [before] = (await broker.secretValues?.('receipt')) ?? [];
    await broker.close();
    const result = await leaseq([
      'secret',
      'rotate',
      '--storage',
      storage,
      '--grace-ms',
      '3600000',
    ]);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toContain('previous one stays valid for 3600000 ms');
    const after = await open(storage);
    const values = (await after.secretValues?.('receipt')) ?? [];
    await after.close();
    expect(values).toHaveLength(2);
    expect(values[1]).toBe(before);
    expect(values[0]).not.toBe(before);
  });

  it('refuses a storage that keeps no secrets across processes, and a bad grace period', async () => {
    const memory = await leaseq(['secret', 'rotate', '--storage', 'memory:']);
    expect(memory.code).toBe(2);
    expect(memory.stderr).toContain('memory: keeps nothing between processes');
    expect((await leaseq(['secret', 'rotate', '--grace-ms', 'soon'])).code).toBe(2);
  });

  it('refuses a storage URL that names no storage as a usage error, offering neither a server nor memory:', async () => {
    const typo = await leaseq(['secret', 'rotate', '--storage', 'foo']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('unsupported storage URL "foo"');
    expect(typo.stderr).not.toContain('http');
    // Nor memory:, which it refuses.
    expect(typo.stderr).not.toContain('memory:');
    const server = await leaseq(['secret', 'rotate', '--storage', 'http://127.0.0.1:1']);
    expect(server.code).toBe(2);
    expect(server.stderr).toContain('names a leaseq server');
    expect(server.stderr).toContain('use sqlite:path/to.db or postgres://…');
    expect(server.stderr).not.toContain('memory:');
    expect(server.stderr).toContain('see leaseq secret rotate --help');
  });

  it('refuses a SQLite path where there is no storage, creating nothing', async () => {
    const missing = join(dir, 'typo', 'leaseq.db');
    const result = await leaseq(['secret', 'rotate', '--storage', `sqlite:${missing}`]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`no storage at ${missing}`);
    expect(result.stdout).toBe('');
    expect(existsSync(join(dir, 'typo'))).toBe(false);
  });

  it('refuses a storage that keeps no receipt secret, making none there', async () => {
    // A database no server without receiptSecret has started on (another one than the
    // servers use, or a backup restored into the wrong place): rotating would make a secret no
    // server reads, while the operator believes the servers' receipts are refused from now on.
    const file = join(dir, 'never-served.db');
    const broker = await open(`sqlite:${file}`);
    await broker.close();
    const result = await leaseq(['secret', 'rotate', '--storage', `sqlite:${file}`]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`sqlite:${file} keeps no receipt secret`);
    expect(result.stdout).toBe('');
    const db = new Database(file, { readonly: true });
    try {
      expect(db.prepare('SELECT COUNT(*) AS n FROM leaseq_secrets').get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
  });
});
