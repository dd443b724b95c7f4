import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/engine/index.js';

describe('redactUrl: a storage URL fit for messages and logs', () => {
  it('hides the password after the user name, and password parameters', () => {
    expect(redactUrl('postgres://app:s3cret@db:5432/jobs')).toBe('postgres://app:***@db:5432/jobs');
    expect(redactUrl('postgres://app@db/jobs?password=s3cret&sslpassword=k3y&x=1')).toBe(
      'postgres://app@db/jobs?password=***&sslpassword=***&x=1',
    );
  });

  it('hides all of a password holding an unencoded @ or /, which drivers take', () => {
    expect(redactUrl('postgres://app:pa@ss@db/jobs')).toBe('postgres://app:***@db/jobs');
    expect(redactUrl('postgres://app:pa/ss@db/jobs')).toBe('postgres://app:***@db/jobs');
  });

  it('hides the password of an empty user name', () => {
    expect(redactUrl('postgres://:s3cret@db/jobs')).toBe('postgres://:***@db/jobs');
  });

  it('leaves a URL without a password as it is', () => {
    for (const url of [
      'postgres://app@db/jobs',
      'postgres://db:5432/jobs',
      'postgres://db/jobs?note=a@b',
      'sqlite:./data/a:b@c.db',
      'memory:',
      'http://127.0.0.1:7700',
    ]) {
      expect(redactUrl(url)).toBe(url);
    }
  });
});
