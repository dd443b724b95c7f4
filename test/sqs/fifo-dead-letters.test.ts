import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  ListMessageMoveTasksCommand,
  type Message,
  SendMessageCommand,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { until } from '../until.js';
import {
  arn,
  failure,
  freshName,
  giveBack as giveBackNow,
  receiveNow,
  sqsServerFor,
  useSqsEngines,
} from './helpers.js';

const engines = await useSqsEngines();

describe.each(engines)('FIFO dead-letter queues over $name', (engine) => {
  const server = sqsServerFor(engine);

  async function fifoQueue(name: string, attributes: Record<string, string> = {}) {
    const { QueueUrl } = await server().client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: 'true', ...attributes } }),
    );
    return QueueUrl as string;
  }
  const receive = (QueueUrl: string) => receiveNow(server().client, QueueUrl);
  /** Makes a received message visible again at once: with maxReceiveCount 1 it dies. */
  const giveBack = (QueueUrl: string, message: Message) =>
    giveBackNow(server().client, QueueUrl, message);
  const bodies = (messages: Message[]) => messages.map((message) => message.Body);

  it('a message received maxReceiveCount times moves to the FIFO dead-letter queue with its MessageId and group; its group goes on; a move task brings the group back in order', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const dlqName = `${freshName('dlq')}.fifo`;
    const dlq = await fifoQueue(dlqName);
    const sourceName = `${freshName('src')}.fifo`;
    const source = await fifoQueue(sourceName, {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn(dlqName), maxReceiveCount: 1 }),
    });
    const sent: Record<string, string> = {};
    for (const [body, group] of [
      ['g1', 'g'],
      ['g2', 'g'],
      ['h1', 'h'],
      ['g3', 'g'],
    ]) {
      const answer = await server().client.send(
        new SendMessageCommand({
          QueueUrl: source,
          MessageBody: body,
          MessageGroupId: group,
          MessageDeduplicationId: body,
        }),
      );
      sent[body as string] = answer.MessageId as string;
    }
    const first = await receive(source);
    expect(bodies(first)).toEqual(['g1', 'h1']);
    // g1 dies (its one receive used up): it moves to the DLQ, and g2 is next in its group.
    await giveBack(source, first[0] as Message);
    const second = await receive(source);
    expect(bodies(second)).toEqual(['g2']);
    await giveBack(source, second[0] as Message);
    // In the dead-letter queue: the same MessageIds, the group kept, in the order they died.
    const dead = await receive(dlq);
    expect(dead.map((message) => [message.Body, message.MessageId])).toEqual([['g1', sent.g1]]);
    expect(dead[0]?.Attributes).toMatchObject({
      MessageGroupId: 'g',
      MessageDeduplicationId: 'g1',
      DeadLetterQueueSourceArn: arn(sourceName),
      ApproximateReceiveCount: '1',
    });
    expect(dead[0]?.Attributes?.SequenceNumber).toMatch(/^\d{20}$/);
    // g2 waits behind g1 there too; g1 given back, the move task takes both, in order.
    await server().client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: dlq,
        ReceiptHandle: dead[0]?.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    await server().client.send(new StartMessageMoveTaskCommand({ SourceArn: arn(dlqName) }));
    const tasks = await until(
      async () => {
        const answer = await server().client.send(
          new ListMessageMoveTasksCommand({ SourceArn: arn(dlqName) }),
        );
        return answer.Results?.[0]?.Status === 'COMPLETED' ? answer : undefined;
      },
      { what: 'the move task to complete', tries: 500 },
    );
    expect(tasks.Results?.[0]).toMatchObject({
      ApproximateNumberOfMessagesMoved: 2,
      ApproximateNumberOfMessagesToMove: 2,
    });
    expect(await receive(dlq)).toEqual([]);
    // Back in the source: behind g3 (still waiting there), g1 then g2, with their MessageIds.
    const drained: Message[] = [];
    for (let round = 0; round < 10; round++) {
      const batch = await receive(source);
      if (batch.length === 0) break;
      for (const message of batch) {
        drained.push(message);
        await server().client.send(
          new DeleteMessageCommand({ QueueUrl: source, ReceiptHandle: message.ReceiptHandle }),
        );
      }
    }
    expect(bodies(drained.filter((message) => message.Attributes?.MessageGroupId === 'g'))).toEqual(
      ['g3', 'g1', 'g2'],
    );
    expect(drained.find((message) => message.Body === 'g1')?.MessageId).toBe(sent.g1);
    // h1 was never given back: it is still in flight, not drained again.
    expect(bodies(drained)).not.toContain('h1');
  });

  it('a stale handle of a message in the dead-letter queue deletes nothing: refused while it is there, success once it is gone', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const dlqName = `${freshName('dlq')}.fifo`;
    const dlq = await fifoQueue(dlqName);
    const source = await fifoQueue(`${freshName('src')}.fifo`, {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn(dlqName), maxReceiveCount: 1 }),
    });
    await server().client.send(
      new SendMessageCommand({
        QueueUrl: source,
        MessageBody: 'work',
        MessageGroupId: 'g',
        MessageDeduplicationId: 'd',
      }),
    );
    const [late] = await receive(source);
    await giveBack(source, late as Message);
    const deleteLate = () =>
      server().client.send(
        new DeleteMessageCommand({ QueueUrl: source, ReceiptHandle: late?.ReceiptHandle }),
      );
    const refused = await failure(deleteLate());
    expect(refused.name).toBe('InvalidParameterValue');
    expect(refused.message).toContain('expired');
    const [dead] = await receive(dlq);
    expect(dead?.MessageId).toBe(late?.MessageId);
    await server().client.send(
      new DeleteMessageCommand({ QueueUrl: dlq, ReceiptHandle: dead?.ReceiptHandle }),
    );
    await deleteLate();
  });
});
