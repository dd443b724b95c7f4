import { afterAll, describe, expect, it } from 'vitest';
import { LeaseQueue } from '../../src/core/index.js';
import { ClockError, openEngine, ValidationError } from '../../src/index.js';
import { engineFactories, postgresUrl, queueName } from '../conformance/engines.js';

// Two processes share storage: the one whose call commits second may carry an earlier `now`.
// 'strict' refuses it (R2, as the core); 'follow' runs it at the queue's clock.
const factories = engineFactories().filter((factory) => factory.name !== 'memory');
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

describe.each(factories)('clockMode on $name', (factory) => {
  it("'follow' raises a now behind the clock to it; deadlines count from there", async () => {
    const strict = await factory.open();
    const name = queueName('follow');
    const writer = await strict.queue(name, { visibility: 10 });
    await writer.publish(100, { id: 'a' });
    const follower = await openEngine(urlOf(factory.name, strict.target), { clockMode: 'follow' });
    const late = await follower.queue(name);
    const [delivery] = await late.reserve(90);
    expect(delivery).toMatchObject({ id: 'a', token: 1, deadline: 110 });
    expect(await late.queueTime()).toBe(100);
    await expect(writer.ack(95, 1)).rejects.toBeInstanceOf(ClockError);
    expect(await late.ack(95, 1)).toBe(true);
    await expect(late.ack(1.5, 1)).rejects.toBeInstanceOf(ClockError);
    await strict.deleteQueue(name);
    await follower.close();
    await strict.close();
  });

  it('clockMode follow runs a nackUpTo behind the clock at the queue time: its delay and deaths count from there, as in the core', async () => {
    const strict = await factory.open();
    const follower = await openEngine(urlOf(factory.name, strict.target), { clockMode: 'follow' });
    await strict.close();
    const name = queueName('follow-nackupto');
    const queue = await follower.queue(name, { visibility: 50 });
    const core = new LeaseQueue({ visibility: 50 });
    const session = await queue.openSession(0);
    const coreSession = core.openSession(0);
    await queue.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
    core.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
    await queue.reserve(100, { max: 2, session });
    core.reserve(100, { max: 2, session: coreSession });
    // The core takes the time the follower raises each `now` to: the queue's clock, 100.
    expect(await queue.nackUpTo(90, session, 1, { delay: 5 })).toBe(
      core.nackUpTo(100, coreSession, 1, { delay: 5 }),
    );
    const dead = { requeue: false, reason: 'poison' };
    expect(await queue.nackUpTo(95, session, 2, dead)).toBe(
      core.nackUpTo(100, coreSession, 2, dead),
    );
    expect(await queue.inspect()).toEqual(core.inspect());
    expect((await queue.inspect()).delayed).toEqual([{ id: 'a', availableAt: 105 }]);
    expect(await queue.job('a')).toEqual(core.job('a'));
    expect(await queue.deadLetters()).toEqual(core.deadLetters());
    await follower.deleteQueue(name);
    await follower.close();
  });

  it('an unknown clockMode is a ValidationError', async () => {
    const engine = await factory.open();
    const url = urlOf(factory.name, engine.target);
    await engine.close();
    await expect(openEngine(url, { clockMode: 'loose' as 'follow' })).rejects.toBeInstanceOf(
      ValidationError,
    );
  });
});

/** The URL the factory opened (the SQLite target is its URL; PostgreSQL's hides the password). */
function urlOf(name: string, target: string): string {
  return name === 'postgres' ? postgresUrl() : target;
}
