import { join } from 'node:path';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ListQueueTagsCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { postgresUrl, queueName, useConformanceEngines } from '../conformance/engines.js';
import { call } from '../server/helpers.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { startSqsServer } from './helpers.js';

const engines = await useConformanceEngines({ client: false });
const dir = temporaryDirectory('leaseq-sqs-');

const urls: Record<string, string> = {
  sqlite: `sqlite:${join(dir, 'sqs.db')}`,
  postgres: postgresUrl(),
};

describe.each(engines.filter((engine) => engine.name !== 'memory'))('SQS over $name', (engine) => {
  it('queue attributes, tags and message envelopes survive a restart; DeleteQueue forgets them', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const url = urls[engine.name] as string;
    const name = queueName('sqs');
    const first = await startSqsServer({ url });
    const { QueueUrl } = await first.client.send(
      new CreateQueueCommand({
        QueueName: name,
        Attributes: { DelaySeconds: '0', ReceiveMessageWaitTimeSeconds: '1', Policy: '{}' },
        tags: { team: 'a' },
      }),
    );
    await first.client.send(
      new SendMessageCommand({
        QueueUrl,
        MessageBody: 'durable',
        MessageAttributes: { k: { DataType: 'String', StringValue: 'v' } },
      }),
    );
    await first.close();

    const second = await startSqsServer({ url });
    try {
      const attributes = await second.client.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }),
      );
      expect(attributes.Attributes).toMatchObject({
        ReceiveMessageWaitTimeSeconds: '1',
        Policy: '{}',
        ApproximateNumberOfMessages: '1',
      });
      const tags = await second.client.send(new ListQueueTagsCommand({ QueueUrl }));
      expect(tags.Tags).toEqual({ team: 'a' });
      const received = await second.client.send(
        new ReceiveMessageCommand({ QueueUrl, MessageAttributeNames: ['All'] }),
      );
      expect(received.Messages?.[0]?.Body).toBe('durable');
      expect(received.Messages?.[0]?.MessageAttributes?.k?.StringValue).toBe('v');
      await second.client.send(new DeleteQueueCommand({ QueueUrl }));
      // Made again through /v1, the queue has no SQS metadata left over.
      await call(second.baseUrl, 'PUT', `/v1/queues/${name}`, { body: {} });
      const fresh = await second.client.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['Policy', 'DelaySeconds'] }),
      );
      expect(fresh.Attributes).toEqual({ DelaySeconds: '0' });
    } finally {
      await second.close();
    }
  });
});
