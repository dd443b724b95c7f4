import { afterEach, describe, expect, it } from 'vitest';
import type { Broker } from '../../src/broker/index.js';
import { NotFoundError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { QueueDirectory } from '../../src/server/queue-directory.js';

let broker: Broker | undefined;
afterEach(async () => {
  await broker?.close();
  broker = undefined;
});

describe('QueueDirectory: the server looks queues up and never creates one by looking', () => {
  it('a queue deleted after the list was read stays deleted: its handle answers NOT_FOUND', async () => {
    broker = await open('memory:');
    const directory = new QueueDirectory(broker);
    await broker.queue('gone');
    // The list a request read, then another request's delete, then the lookup.
    const listed = new Set((await broker.listQueues()).map((info) => info.name));
    expect(await broker.deleteQueue('gone')).toBe(true);
    const queue = await directory.existing('gone', listed);
    await expect(queue.publish({ id: 'a' })).rejects.toBeInstanceOf(NotFoundError);
    expect(await broker.listQueues()).toEqual([]);
  });

  it('a missing queue is NOT_FOUND; one made elsewhere afterwards is found and served', async () => {
    broker = await open('memory:');
    const directory = new QueueDirectory(broker);
    await expect(directory.existing('later')).rejects.toBeInstanceOf(NotFoundError);
    await broker.queue('later', { visibility: 5000 });
    const queue = await directory.existing('later');
    expect((await queue.publish({ id: 'a' })).id).toBe('a');
    expect((await queue.options()).visibility).toBe(5000);
  });

  it('a lookup reads the queue it names, not the list of every queue', async () => {
    broker = await open('memory:');
    for (const name of ['a', 'b', 'c']) await broker.queue(name);
    let lists = 0;
    const listQueues = broker.listQueues.bind(broker);
    broker.listQueues = () => {
      lists += 1;
      return listQueues();
    };
    const directory = new QueueDirectory(broker);
    expect((await (await directory.existing('b')).publish({ id: 'x' })).id).toBe('x');
    await expect(directory.existing('missing')).rejects.toBeInstanceOf(NotFoundError);
    // A name no queue can have is not found either, as when the list was read.
    await expect(directory.existing('no such/name')).rejects.toBeInstanceOf(NotFoundError);
    expect(lists).toBe(0);
  });
});
