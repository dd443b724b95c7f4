import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../server/helpers.js';
import { failure, type SqsTestServer, startSqsServer } from './helpers.js';

const ADMIN = { id: 'admin', secret: 'admin-secret-0123456789' };
const TEAM = { id: 'team', secret: 'team-secret-01234567890' };
let server: SqsTestServer;
let admin: SQSClient;
let team: SQSClient;

const policy = (target: string, count: number) =>
  JSON.stringify({
    deadLetterTargetArn: `arn:aws:sqs:us-east-1:000000000000:${target}`,
    maxReceiveCount: count,
  });

beforeAll(async () => {
  server = await startSqsServer({
    keys: [
      { name: ADMIN.id, key: ADMIN.secret, allow: [{ queues: '*', actions: ['admin'] }] },
      { name: TEAM.id, key: TEAM.secret, allow: [{ queues: 'team-*', actions: ['admin'] }] },
    ],
  });
  admin = server.clientWith(ADMIN.id, ADMIN.secret);
  team = server.clientWith(TEAM.id, TEAM.secret);
  // The operator links the team's queue to a shared dead-letter queue the team may not send to.
  await admin.send(new CreateQueueCommand({ QueueName: 'shared-dlq' }));
  await admin.send(
    new CreateQueueCommand({
      QueueName: 'team-1',
      Attributes: { RedrivePolicy: policy('shared-dlq', 5) },
    }),
  );
});

afterAll(async () => {
  await server.close();
});

describe('CreateQueue of an existing queue with a RedrivePolicy', () => {
  it('refuses a dead-letter queue the key may not send to, as PUT /v1/queues/{name} does, whether the attributes match or not', async () => {
    const url = `${server.baseUrl}/sqs/000000000000/team-1`;
    const before = await admin.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }),
    );
    for (const count of [5, 7]) {
      const refused = await failure(
        team.send(
          new CreateQueueCommand({
            QueueName: 'team-1',
            Attributes: { RedrivePolicy: policy('shared-dlq', count) },
          }),
        ),
      );
      expect(refused).toMatchObject({ name: 'AccessDenied', status: 403 });
      expect(refused.message).toContain('shared-dlq');
    }
    // The same request through /v1 is refused alike.
    const put = await call(server.baseUrl, 'PUT', '/v1/queues/team-1', {
      apiKey: TEAM.secret,
      body: { deadLetterQueue: 'shared-dlq', maxDeliveries: 5 },
    });
    expect(put.status).toBe(403);
    expect(put.body.error.code).toBe('FORBIDDEN');
    const after = await admin.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }),
    );
    expect(after.Attributes).toEqual(before.Attributes);
    // Without a RedrivePolicy, the key opens its queue as before.
    const opened = await team.send(new CreateQueueCommand({ QueueName: 'team-1' }));
    expect(opened.QueueUrl).toBe(url);
  });
});
