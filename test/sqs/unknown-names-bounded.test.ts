import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  type QueueAttributeName,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { call } from '../server/helpers.js';
import { failure, freshName, sqsServer } from './helpers.js';

const server = sqsServer();
const LONG = `${'n'.repeat(64)}${'x'.repeat(99_936)}`;
const SHOWN = `${'n'.repeat(64)}… (100,000 characters)`;

describe('SQS errors about unknown names echo a bounded part of them', () => {
  it('a redrive policy field name of 100,000 characters is shown by its first 64 and its length', async () => {
    const name = freshName('r');
    const refused = await failure(
      server().client.send(
        new CreateQueueCommand({
          QueueName: name,
          Attributes: {
            RedrivePolicy: JSON.stringify({
              deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:dlq',
              maxReceiveCount: 3,
              [LONG]: 1,
            }),
          },
        }),
      ),
    );
    expect(refused.name).toBe('InvalidParameterValue');
    expect(refused.message).toContain(`Unknown field ${SHOWN} in the redrive policy.`);
    expect(refused.message.length).toBeLessThan(400);
    expect((await call(server().baseUrl, 'GET', `/v1/queues/${name}`)).status).toBe(404);
  });

  it('an attribute name of 100,000 characters is shown by its first 64 and its length', async () => {
    const name = freshName('a');
    const created = failure(
      server().client.send(
        new CreateQueueCommand({ QueueName: name, Attributes: { [LONG]: '1' } }),
      ),
    );
    expect(await created).toMatchObject({
      name: 'InvalidAttributeName',
      message: `Unknown Attribute ${SHOWN}.`,
    });
    const { QueueUrl } = await server().client.send(new CreateQueueCommand({ QueueName: name }));
    const read = await failure(
      server().client.send(
        new GetQueueAttributesCommand({
          QueueUrl,
          AttributeNames: [LONG as QueueAttributeName],
        }),
      ),
    );
    expect(read).toMatchObject({
      name: 'InvalidAttributeName',
      message: `Unknown Attribute ${SHOWN}.`,
    });
  });
});
