import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StorageUnavailableError } from '../../src/core/index.js';
import { openEngine } from '../../src/engine/index.js';
import { temporaryDirectory } from '../temporary-directory.js';

/**
 * Opening a SQLite file makes the missing directories of its path first. An open that then
 * fails (a mistyped path, a name the file system refuses) removes the directories it made,
 * deepest first and only while empty, and nothing that was there before it.
 */
const dir = temporaryDirectory('leaseq-sqlite-open-directories-');

let roots = 0;

/** A directory of its own for one test, made empty. */
function freshRoot(): string {
  roots += 1;
  const root = join(dir, `root-${roots}`);
  mkdirSync(root);
  return root;
}

// Longer than a file name may be (255 bytes on the usual file systems).
const tooLong = 'n'.repeat(300);

describe('SQLite open: the directories a failed open made', () => {
  it('a file name SQLite cannot open: the directories made for it are removed, the one there before stays', async () => {
    const root = freshRoot();
    const existing = join(root, 'existing');
    mkdirSync(existing);
    const path = join(existing, 'new', 'deeper', `${tooLong}.db`);
    const failure = openEngine(`sqlite:${path}`);
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(failure).rejects.toThrow(path);
    expect(readdirSync(root)).toEqual(['existing']);
    expect(readdirSync(existing)).toEqual([]);
  });

  it('a directory that cannot be made: the ones made before it are removed', async () => {
    const root = freshRoot();
    const failure = openEngine(`sqlite:${join(root, 'made', tooLong, 'below', 'x.db')}`);
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(failure).rejects.toThrow(/its directory .* cannot be created \(ENAMETOOLONG\)/);
    expect(readdirSync(root)).toEqual([]);
  });

  it('a failure after SQLite made the file: its directory and those above it stay', async () => {
    const root = freshRoot();
    // Short enough for the file, too long for its journal beside it: the switch to WAL fails.
    const name = `${'j'.repeat(250)}.db`;
    const path = join(root, 'outer', 'inner', name);
    const failure = openEngine(`sqlite:${path}`);
    await expect(failure).rejects.toBeInstanceOf(StorageUnavailableError);
    expect(readdirSync(root)).toEqual(['outer']);
    expect(readdirSync(join(root, 'outer'))).toEqual(['inner']);
    expect(readdirSync(join(root, 'outer', 'inner'))).toEqual([name]);
  });

  it('an open that succeeds keeps the directories it made', async () => {
    const root = freshRoot();
    const path = join(root, 'kept', 'x.db');
    const engine = await openEngine(`sqlite:${path}`);
    await engine.close();
    expect(existsSync(path)).toBe(true);
  });
});
