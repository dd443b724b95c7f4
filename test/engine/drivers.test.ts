import { describe, expect, it } from 'vitest';
import { UnsupportedError } from '../../src/core/index.js';
import { loadDriver } from '../../src/engine/open-engine.js';

describe('database drivers are optional peer dependencies', () => {
  it('names a missing driver and the command that installs it', async () => {
    const missing = 'leaseq-no-such-driver';
    const error = await loadDriver(missing, 'Imaginary', () => import(missing)).catch((e) => e);
    expect(error).toBeInstanceOf(UnsupportedError);
    expect(error.message).toBe(
      `Imaginary storage needs the ${missing} package: npm install ${missing}`,
    );
  });

  it('passes any other failure of loading through unchanged', async () => {
    const failure = new Error('boom');
    await expect(loadDriver('pg', 'PostgreSQL', () => Promise.reject(failure))).rejects.toBe(
      failure,
    );
  });
});
