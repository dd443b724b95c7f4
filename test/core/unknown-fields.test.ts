import { describe, expect, it } from 'vitest';
import { RECEIVE_ONLY_OPTIONS } from '../../src/broker/index.js';
import { build, parseOperation, ValidationError } from '../../src/core/index.js';

// Operations as values: an unknown name is refused by the builders as by the parse of the wire,
// with the same message, so a misspelt option never falls back to its default unnoticed.

// biome-ignore lint/suspicious/noExplicitAny: bad input on purpose, past the types
const bad = (value: unknown): any => value;

function issues(call: () => unknown): readonly string[] {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).issues;
  }
  throw new Error('expected a ValidationError');
}

describe('unknown fields are refused, the same by build and parseOperation', () => {
  it('of a job, each one named, with the valid fields of the job still checked', () => {
    expect(issues(() => build.publish(bad({ id: 'a', paylod: 1 })))).toEqual([
      'unknown field "paylod" of job',
    ]);
    expect(
      issues(() => build.publishBatch(bad([{ id: 'a' }, { id: '', dealy: 5, task: 'x' }]))),
    ).toEqual([
      'unknown field "dealy" of jobs[1]',
      'unknown field "task" of jobs[1]',
      'jobs[1].id must be a string of 1 to 256 characters, got ""',
    ]);
    expect(
      issues(() => parseOperation({ type: 'publish', jobs: [{ id: 'a', paylod: 1 }] })),
    ).toEqual(['unknown field "paylod" of jobs[0]']);
  });

  it("only a job's own names count: what its prototype carries is not read", () => {
    const inherited = Object.assign(Object.create({ note: 'from the prototype' }), { id: 'a' });
    expect(build.publish(inherited).jobs).toEqual([
      {
        id: 'a',
        payload: undefined,
        delay: 0,
        priority: 0,
        group: undefined,
        expiresAt: undefined,
      },
    ]);
    const options = Object.assign(Object.create({ note: 'from the prototype' }), { max: 2 });
    expect(build.reserve(options)).toMatchObject({ type: 'reserve', max: 2 });
  });

  it('every field of a job is known', () => {
    const job = { id: 'a', payload: 1, delay: 2, priority: 3, group: 'g', expiresAt: 9 };
    expect(build.publish(job).jobs).toEqual([job]);
  });

  it("of a reserve's options, on the fast path too", () => {
    expect(issues(() => build.reserve(bad({ visiblity: 5 })))).toEqual([
      'unknown field "visiblity" of reserve',
    ]);
    expect(issues(() => build.reserve(bad({ max: 2, wait: 10 })))).toEqual([
      'unknown field "wait" of reserve',
    ]);
    expect(issues(() => parseOperation({ type: 'reserve', wait: 10 }))).toEqual([
      'unknown field "wait" of reserve',
    ]);
  });

  it("a receive's own options pass where its caller reads them, and nothing more", () => {
    const signal = new AbortController().signal;
    expect(build.reserve(bad({ max: 2, wait: 10, signal }), RECEIVE_ONLY_OPTIONS)).toMatchObject({
      type: 'reserve',
      max: 2,
    });
    expect(issues(() => build.reserve(bad({ wiat: 10 }), RECEIVE_ONLY_OPTIONS))).toEqual([
      'unknown field "wiat" of reserve',
    ]);
  });

  it('of the options of nack, nackUpTo, openSession, purgeQueue, moveJobs and cancel', () => {
    expect(issues(() => build.nack(1, bad({ requeu: false })))).toEqual([
      'unknown field "requeu" of nack',
    ]);
    expect(
      issues(() => build.nackUpTo('s', 1, bad({ reason: 'r', requeue: false, x: 1 }))),
    ).toEqual(['unknown field "x" of nackUpTo']);
    expect(issues(() => build.openSession(bad({ prefech: 5 })))).toEqual([
      'unknown field "prefech" of openSession',
    ]);
    expect(issues(() => build.purgeQueue(bad({ deadToo: true })))).toEqual([
      'unknown field "deadToo" of purgeQueue',
    ]);
    expect(issues(() => build.moveJobs(bad({ destination: 'q' })))).toEqual([
      'unknown field "destination" of moveJobs',
    ]);
    expect(issues(() => build.cancel('a', bad({ remov: true })))).toEqual([
      'unknown field "remov" of cancel',
    ]);
  });

  it('a field the method takes as an argument is not an option too', () => {
    expect(issues(() => build.nack(1, bad({ token: 2 })))).toEqual([
      'unknown field "token" of nack',
    ]);
    expect(issues(() => build.cancel('a', bad({ id: 'b' })))).toEqual([
      'unknown field "id" of cancel',
    ]);
  });

  it('the known options still build what they did', () => {
    expect(build.nack(1, { requeue: false, reason: 'r' })).toMatchObject({
      token: 1,
      requeue: false,
      reason: 'r',
    });
    expect(build.cancel('a', { remove: true })).toMatchObject({ id: 'a', remove: true });
    expect(build.openSession({ prefetch: 2 })).toMatchObject({ prefetch: 2 });
  });
});
