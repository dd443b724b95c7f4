import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  PurgeQueueCommand,
  type QueueAttributeName,
  SendMessageCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { call } from '../server/helpers.js';
import { failure, freshName, sqsServerFor, useSqsEngines } from './helpers.js';

const engines = await useSqsEngines();

describe.each(engines)('FIFO queues over $name', (engine) => {
  const server = sqsServerFor(engine);

  const create = (QueueName: string, Attributes: Record<string, string> = {}) =>
    server().client.send(new CreateQueueCommand({ QueueName, Attributes }));
  const attributesOf = async (QueueUrl: string, AttributeNames: QueueAttributeName[] = ['All']) =>
    (await server().client.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames })))
      .Attributes ?? {};
  const set = (QueueUrl: string, Attributes: Record<string, string>) =>
    server().client.send(new SetQueueAttributesCommand({ QueueUrl, Attributes }));
  const exists = async (name: string) =>
    (await call(server().baseUrl, 'GET', `/v1/queues/${name}`)).status === 200;

  it('CreateQueue with FifoQueue=true and a .fifo name makes a queue with the FIFO attributes and a 5-minute dedupWindow', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const name = `${freshName('fifo')}.fifo`;
    const { QueueUrl } = await create(name, { FifoQueue: 'true', VisibilityTimeout: '20' });
    expect(QueueUrl).toBe(`${server().baseUrl}/sqs/000000000000/${name}`);
    const url = QueueUrl as string;
    expect(await attributesOf(url)).toMatchObject({
      FifoQueue: 'true',
      ContentBasedDeduplication: 'false',
      DeduplicationScope: 'queue',
      FifoThroughputLimit: 'perQueue',
      VisibilityTimeout: '20',
      QueueArn: `arn:aws:sqs:us-east-1:000000000000:${name}`,
    });
    expect(await attributesOf(url, ['ContentBasedDeduplication'])).toEqual({
      ContentBasedDeduplication: 'false',
    });
    const v1 = await call(server().baseUrl, 'GET', `/v1/queues/${name}`);
    expect(v1.body.options).toMatchObject({ dedupWindow: 300_000, visibility: 20_000 });
    // The same attributes again: the same URL; another value: QueueNameExists.
    expect((await create(name, { FifoQueue: 'true', VisibilityTimeout: '20' })).QueueUrl).toBe(url);
    expect(
      (await failure(create(name, { FifoQueue: 'true', ContentBasedDeduplication: 'true' }))).name,
    ).toBe('QueueNameExists');
    // Listed, found, purged and deleted like any queue.
    expect((await server().client.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl).toBe(
      url,
    );
    const listed = await server().client.send(new ListQueuesCommand({ QueueNamePrefix: 'fifo-' }));
    expect(listed.QueueUrls).toContain(url);
    await server().client.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: 'x',
        MessageGroupId: 'g',
        MessageDeduplicationId: 'd',
      }),
    );
    await server().client.send(new PurgeQueueCommand({ QueueUrl: url }));
    expect(await attributesOf(url, ['ApproximateNumberOfMessages'])).toEqual({
      ApproximateNumberOfMessages: '0',
    });
    await server().client.send(new DeleteQueueCommand({ QueueUrl: url }));
    expect(await exists(name)).toBe(false);
  });

  it('refuses, as SQS does, a .fifo name without FifoQueue=true, FifoQueue=true without one, and FIFO settings on standard queues', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const cases: [string, Record<string, string>, string, string][] = [
      [`${freshName('f')}.fifo`, {}, 'InvalidParameterValue', 'A name ending in .fifo'],
      [`${freshName('f')}.fifo`, { FifoQueue: 'false' }, 'InvalidParameterValue', '.fifo'],
      [freshName('f'), { FifoQueue: 'true' }, 'InvalidParameterValue', 'must end with .fifo'],
      [`${'x'.repeat(76)}.fifo`, { FifoQueue: 'true' }, 'InvalidParameterValue', '1 to 80'],
      [`${freshName('f')}.fifo`, { FifoQueue: 'yes' }, 'InvalidAttributeValue', 'FifoQueue'],
      [freshName('s'), { ContentBasedDeduplication: 'true' }, 'InvalidAttributeName', 'FifoQueue'],
      [freshName('s'), { DeduplicationScope: 'queue' }, 'InvalidAttributeName', 'FifoQueue'],
      [freshName('s'), { FifoThroughputLimit: 'perQueue' }, 'InvalidAttributeName', 'FifoQueue'],
      [
        `${freshName('f')}.fifo`,
        { FifoQueue: 'true', DeduplicationScope: 'group' },
        'InvalidAttributeValue',
        'DeduplicationScope',
      ],
      [
        `${freshName('f')}.fifo`,
        { FifoQueue: 'true', FifoThroughputLimit: 'unlimited' },
        'InvalidAttributeValue',
        'FifoThroughputLimit',
      ],
    ];
    for (const [name, attributes, shape, words] of cases) {
      const refused = await failure(create(name, attributes));
      expect(refused.name, `${name} ${JSON.stringify(attributes)}`).toBe(shape);
      expect(refused.message).toContain(words);
      expect(refused.status).toBe(400);
      expect(await exists(name)).toBe(false);
    }
    // 75 characters and .fifo are 80: the longest FIFO name.
    const longest = `${'y'.repeat(75)}.fifo`;
    const made = await create(longest, { FifoQueue: 'TRUE', ContentBasedDeduplication: 'True' });
    expect(await attributesOf(made.QueueUrl as string)).toMatchObject({
      FifoQueue: 'true',
      ContentBasedDeduplication: 'true',
    });
    await server().client.send(new DeleteQueueCommand({ QueueUrl: made.QueueUrl }));
  });

  it('SetQueueAttributes changes ContentBasedDeduplication, DeduplicationScope and FifoThroughputLimit, never the queue type', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const name = `${freshName('set')}.fifo`;
    const url = (await create(name, { FifoQueue: 'true' })).QueueUrl as string;
    await set(url, {
      ContentBasedDeduplication: 'true',
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
      FifoQueue: 'true',
    });
    expect(await attributesOf(url)).toMatchObject({
      FifoQueue: 'true',
      ContentBasedDeduplication: 'true',
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
    });
    const toStandard = await failure(set(url, { FifoQueue: 'false' }));
    expect(toStandard).toMatchObject({ name: 'InvalidAttributeValue', status: 400 });
    expect(toStandard.message).toContain('Modifying queue type is not supported');
    const standard = (await create(freshName('std'))).QueueUrl as string;
    expect((await failure(set(standard, { FifoQueue: 'true' }))).name).toBe(
      'InvalidAttributeValue',
    );
    expect((await failure(set(standard, { ContentBasedDeduplication: 'true' }))).name).toBe(
      'InvalidAttributeName',
    );
    // A standard queue shows none of the FIFO attributes.
    const all = await attributesOf(standard);
    for (const attribute of ['FifoQueue', 'ContentBasedDeduplication', 'DeduplicationScope']) {
      expect(all).not.toHaveProperty(attribute);
    }
  });

  it('a FIFO queue’s dead-letter queue must be FIFO, and a standard queue’s standard', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const fifoDlq = `${freshName('dlq')}.fifo`;
    await create(fifoDlq, { FifoQueue: 'true' });
    const standardDlq = freshName('dlq');
    await create(standardDlq);
    const policy = (target: string) =>
      JSON.stringify({
        deadLetterTargetArn: `arn:aws:sqs:us-east-1:000000000000:${target}`,
        maxReceiveCount: 2,
      });
    const wrongForFifo = await failure(
      create(`${freshName('src')}.fifo`, { FifoQueue: 'true', RedrivePolicy: policy(standardDlq) }),
    );
    expect(wrongForFifo.name).toBe('InvalidParameterValue');
    expect(wrongForFifo.message).toContain('same type of queue as the source');
    expect((await failure(create(freshName('src'), { RedrivePolicy: policy(fifoDlq) }))).name).toBe(
      'InvalidParameterValue',
    );
    const source = `${freshName('src')}.fifo`;
    const url = (await create(source, { FifoQueue: 'true', RedrivePolicy: policy(fifoDlq) }))
      .QueueUrl as string;
    expect((await failure(set(url, { RedrivePolicy: policy(standardDlq) }))).name).toBe(
      'InvalidParameterValue',
    );
    const v1 = await call(server().baseUrl, 'GET', `/v1/queues/${source}`);
    expect(v1.body.options).toMatchObject({ deadLetterQueue: fifoDlq, maxDeliveries: 2 });
  });
});
