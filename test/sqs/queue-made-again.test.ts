import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  type ListMessageMoveTasksResultEntry,
  SendMessageCommand,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import type { Broker } from '../../src/broker/index.js';
import { open } from '../../src/index.js';
import { arn, giveBack, receiveNow, sqsServerFor, useSqsEngines } from './helpers.js';

// A queue deleted and made again under its name is another queue: what was begun on the one
// deleted, or is still held of it elsewhere, never acts on the one made again.

const engines = await useSqsEngines();

let counter = 0;
/** A queue name unique to this run: PostgreSQL keeps queues between runs. */
function uniqueName(label: string, fifo = false): string {
  counter += 1;
  return `${label}-${process.pid}-${Date.now().toString(36)}-${counter}${fifo ? '.fifo' : ''}`;
}

describe.each(engines)('SQS queues made again over $name', (engine) => {
  const server = sqsServerFor(engine);

  async function create(name: string, attributes: Record<string, string> = {}): Promise<string> {
    const { QueueUrl } = await server().client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
    );
    return QueueUrl as string;
  }

  async function ready(QueueUrl: string): Promise<string | undefined> {
    const { Attributes } = await server().client.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
    );
    return Attributes?.ApproximateNumberOfMessages;
  }

  it('a move task whose source queue is deleted and made again by another process moves nothing of the new queue', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const dlq = uniqueName('made-again-dlq');
    const dlqUrl = await create(dlq);
    await create(uniqueName('made-again-src'), {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn(dlq), maxReceiveCount: 1 }),
    });
    const destination = uniqueName('made-again-to');
    const destinationUrl = await create(destination);
    for (const body of ['one', 'two', 'three']) {
      await server().client.send(new SendMessageCommand({ QueueUrl: dlqUrl, MessageBody: body }));
    }
    await server().client.send(
      new StartMessageMoveTaskCommand({
        SourceArn: arn(dlq),
        DestinationArn: arn(destination),
        MaxNumberOfMessagesPerSecond: 1,
      }),
    );
    const task = async (): Promise<ListMessageMoveTasksResultEntry | undefined> =>
      (await server().client.send(new ListMessageMoveTasksCommand({ SourceArn: arn(dlq) })))
        .Results?.[0];
    for (let attempt = 0; attempt < 2000; attempt++) {
      if (((await task())?.ApproximateNumberOfMessagesMoved ?? 0) > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    // Deleted not through this server: through another process sharing the storage (on memory,
    // the server's own broker, past the server).
    const other: Broker = engine.name === 'memory' ? server().broker : await open(engine.url);
    try {
      expect(await other.deleteQueue(dlq)).toBe(true);
    } finally {
      if (other !== server().broker) await other.close();
    }
    await create(dlq);
    await server().client.send(new SendMessageCommand({ QueueUrl: dlqUrl, MessageBody: 'new' }));
    let ended: ListMessageMoveTasksResultEntry | undefined;
    for (let attempt = 0; attempt < 2000; attempt++) {
      ended = await task();
      if (ended?.Status !== 'RUNNING') break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(ended).toMatchObject({
      Status: 'FAILED',
      FailureReason: `The queue ${dlq} was deleted.`,
    });
    const moved = ended?.ApproximateNumberOfMessagesMoved ?? 0;
    expect(moved).toBeLessThan(3);
    expect(await ready(destinationUrl)).toBe(String(moved));
    const [left] = await receiveNow(server().client, dlqUrl);
    expect(left?.Body).toBe('new');
  });

  it('a FIFO queue made again takes a send whose de-duplication id a message of the deleted queue had, though that message is in the dead-letter queue', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const dlq = uniqueName('fifo-again-dlq', true);
    const dlqUrl = await create(dlq, { FifoQueue: 'true' });
    const source = uniqueName('fifo-again-src', true);
    const attributes = {
      FifoQueue: 'true',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn(dlq), maxReceiveCount: 1 }),
    };
    const sourceUrl = await create(source, attributes);
    const send = (body: string) =>
      server().client.send(
        new SendMessageCommand({
          QueueUrl: sourceUrl,
          MessageBody: body,
          MessageGroupId: 'g',
          MessageDeduplicationId: 'order-1',
        }),
      );
    const old = await send('old');
    const [received] = await receiveNow(server().client, sourceUrl);
    expect(received?.Body).toBe('old');
    if (received !== undefined) await giveBack(server().client, sourceUrl, received);
    // Its one receive was its last: it died into the dead-letter queue at the give back.
    expect(await ready(dlqUrl)).toBe('1');

    await server().client.send(new DeleteQueueCommand({ QueueUrl: sourceUrl }));
    await create(source, attributes);
    const fresh = await send('new');
    expect(fresh.MessageId).not.toBe(old.MessageId);
    expect((await receiveNow(server().client, sourceUrl)).map((message) => message.Body)).toEqual([
      'new',
    ]);
    // The deleted queue's message stays where it died, with its MessageId.
    const [dead] = await receiveNow(server().client, dlqUrl);
    expect(dead).toMatchObject({ Body: 'old', MessageId: old.MessageId });
  });
});
