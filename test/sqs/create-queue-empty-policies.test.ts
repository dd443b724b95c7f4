import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { failure, freshName, sqsServer } from './helpers.js';

const server = sqsServer();

const create = (QueueName: string, Attributes: Record<string, string> = {}) =>
  server().client.send(new CreateQueueCommand({ QueueName, Attributes }));

const arnOf = (name: string) => `arn:aws:sqs:us-east-1:000000000000:${name}`;

describe('CreateQueue of an existing queue with an empty policy', () => {
  it('an empty Policy or RedriveAllowPolicy matches a queue without one and not a queue with one', async () => {
    const name = freshName('policy');
    const { QueueUrl } = await create(name);
    expect((await create(name, { Policy: '' })).QueueUrl).toBe(QueueUrl);
    expect((await create(name, { RedriveAllowPolicy: '' })).QueueUrl).toBe(QueueUrl);
    const Policy = JSON.stringify({ Version: '2012-10-17', Statement: [] });
    await server().client.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: { Policy } }));
    expect(await failure(create(name, { Policy: '' }))).toMatchObject({
      name: 'QueueNameExists',
      code: 'QueueAlreadyExists',
    });
    expect((await create(name, { Policy })).QueueUrl).toBe(QueueUrl);
  });

  it('an empty RedrivePolicy matches a queue without one and not a queue with one, which keeps it', async () => {
    const target = freshName('dlq');
    await create(target);
    const plain = freshName('plain');
    const { QueueUrl: plainUrl } = await create(plain);
    expect((await create(plain, { RedrivePolicy: '' })).QueueUrl).toBe(plainUrl);
    const source = freshName('source');
    const RedrivePolicy = JSON.stringify({
      deadLetterTargetArn: arnOf(target),
      maxReceiveCount: 3,
    });
    const { QueueUrl } = await create(source, { RedrivePolicy });
    expect(await failure(create(source, { RedrivePolicy: '' }))).toMatchObject({
      name: 'QueueNameExists',
      code: 'QueueAlreadyExists',
    });
    const { Attributes } = await server().client.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['RedrivePolicy'] }),
    );
    expect(JSON.parse(Attributes?.RedrivePolicy ?? '{}')).toEqual({
      deadLetterTargetArn: arnOf(target),
      maxReceiveCount: 3,
    });
  });
});
