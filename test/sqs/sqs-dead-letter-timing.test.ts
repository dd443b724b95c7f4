import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { arn, freshName, sqsServerFor, useSqsEngines } from './helpers.js';

const engines = await useSqsEngines();

describe.each(engines)('when a message moves to the dead-letter queue, over $name', (engine) => {
  const clock = new ManualClock(Date.now());
  const server = sqsServerFor(engine, { clock });

  async function create(name: string, attributes: Record<string, string> = {}) {
    const { QueueUrl } = await server().client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
    );
    return QueueUrl as string;
  }
  const receive = async (QueueUrl: string, VisibilityTimeout = 30) =>
    (
      await server().client.send(
        new ReceiveMessageCommand({
          QueueUrl,
          VisibilityTimeout,
          WaitTimeSeconds: 0,
          MessageSystemAttributeNames: ['DeadLetterQueueSourceArn'],
        }),
      )
    ).Messages ?? [];

  it('not when its last lease ends, but at the next operation on the source queue (R3)', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const dlqName = freshName('dlq');
    const dlq = await create(dlqName);
    const sourceName = freshName('src');
    const source = await create(sourceName, {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn(dlqName), maxReceiveCount: 1 }),
    });
    await server().client.send(new SendMessageCommand({ QueueUrl: source, MessageBody: 'once' }));
    expect(await receive(source, 5)).toHaveLength(1);
    clock.advance(5_000);
    // The lease is over, and nothing touched the source since: the message is still there.
    expect(await receive(dlq)).toEqual([]);
    // Any operation on the source moves it — here GetQueueAttributes.
    const { Attributes } = await server().client.send(
      new GetQueueAttributesCommand({ QueueUrl: source, AttributeNames: ['All'] }),
    );
    expect(Attributes).toMatchObject({
      ApproximateNumberOfMessages: '0',
      ApproximateNumberOfMessagesNotVisible: '0',
    });
    const moved = await receive(dlq);
    expect(moved.map((message) => [message.Body, message.Attributes])).toEqual([
      ['once', { DeadLetterQueueSourceArn: arn(sourceName) }],
    ]);
  });
});
