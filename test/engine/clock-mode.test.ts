import { afterAll, describe, expect, it } from 'vitest';
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
