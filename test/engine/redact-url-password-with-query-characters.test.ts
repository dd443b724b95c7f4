import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { redactUrl } from '../../src/engine/index.js';
import { loadConfig } from '../../src/server/index.js';

/**
 * A password holding an unencoded `?` or `#` makes a URL no driver takes, refused with the URL
 * in the message (at start-up, in a log or a CI run): none of the password may show there. Nor
 * may it where the scheme was left out (`user:password@host/db`).
 */
describe('redactUrl: passwords with characters that start a query or fragment', () => {
  it('hides all of a password holding an unencoded ? or #, and nothing of a URL without one', () => {
    expect(redactUrl('postgres://app:pa#s3cret@db:5432/jobs')).toBe(
      'postgres://app:***@db:5432/jobs',
    );
    expect(redactUrl('postgres://app:pa?s3cret@db:5432/jobs')).toBe(
      'postgres://app:***@db:5432/jobs',
    );
    expect(redactUrl('postgres://app:12?s3cret@db/jobs')).toBe('postgres://app:***@db/jobs');
    // No password: a port, and an @ in the query, stay as they are.
    for (const url of [
      'postgres://db:5432/jobs?note=a@b',
      'postgres://[::1]:5432/jobs?note=a@b',
      'postgres://[::1]/jobs?note=a@b',
    ]) {
      expect(redactUrl(url)).toBe(url);
    }
  });

  it('hides the password of a URL written without its scheme', () => {
    expect(redactUrl('app:s3cret@db/jobs')).toBe('app:***@db/jobs');
  });

  it('leaseq serve refuses such a storage URL without showing the password', () => {
    for (const storage of [
      'postgres://app:pa#s3cret@db:5432/jobs',
      'postgres://app:pa?s3cret@db:5432/jobs',
      'app:s3cret@db/jobs',
    ]) {
      let caught: unknown;
      try {
        loadConfig({ flags: { storage } });
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(ValidationError);
      expect((caught as ValidationError).issues.join('\n')).toMatch(/^storage: /);
      expect((caught as ValidationError).issues.join('\n')).not.toMatch(/s3cret/);
    }
  });
});
