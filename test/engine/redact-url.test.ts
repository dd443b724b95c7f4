import { describe, expect, it } from 'vitest';
import { redactUrl, storageUrlProblem } from '../../src/engine/index.js';

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

  it('hides the password of a keyword/value connection string, refused with its text', () => {
    expect(redactUrl("host=db user=app password='pa ss' dbname=jobs sslpassword=k3y")).toBe(
      'host=db user=app password=*** dbname=jobs sslpassword=***',
    );
    for (const given of ['host=db password=s3cr@t dbname=jobs', 'password = s3cr@t host=db']) {
      const problem = storageUrlProblem(given, { servers: false });
      expect(problem).toMatch(/^unsupported storage URL/);
      expect(problem).not.toContain('s3cr');
    }
    expect(storageUrlProblem('sqlite://app:s3cret@x.db')).not.toContain('s3cret');
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
