import {
  AddPermissionCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListDeadLetterSourceQueuesCommand,
  ListQueuesCommand,
  ListQueueTagsCommand,
  PurgeQueueCommand,
  type QueueAttributeName,
  ReceiveMessageCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  StartMessageMoveTaskCommand,
  TagQueueCommand,
  UntagQueueCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { call } from '../server/helpers.js';
import { failure, freshName, sqsServer, startSqsServer } from './helpers.js';

const server = sqsServer();

const create = (QueueName: string, Attributes: Record<string, string> = {}, tags = {}) =>
  server().client.send(new CreateQueueCommand({ QueueName, Attributes, tags }));

const attributesOf = async (QueueUrl: string, AttributeNames: QueueAttributeName[] = ['All']) =>
  (await server().client.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames })))
    .Attributes ?? {};

describe('CreateQueue', () => {
  it('makes a leaseq queue with the mapped options; same attributes give the same URL', async () => {
    const name = freshName('create');
    const { QueueUrl } = await create(name, { VisibilityTimeout: '45', DelaySeconds: '3' });
    expect(QueueUrl).toBe(`${server().baseUrl}/sqs/000000000000/${name}`);
    const v1 = await call(server().baseUrl, 'GET', `/v1/queues/${name}`);
    expect(v1.body.options).toMatchObject({
      visibility: 45_000,
      maxDeliveries: null,
      maxLease: 43_200_000,
    });
    const again = await create(name, { VisibilityTimeout: '45', DelaySeconds: '3' });
    expect(again.QueueUrl).toBe(QueueUrl);
    expect((await create(name)).QueueUrl).toBe(QueueUrl);
    const other = await failure(create(name, { VisibilityTimeout: '46' }));
    expect(other).toMatchObject({ name: 'QueueNameExists', code: 'QueueAlreadyExists' });
    expect((await failure(create(name, { DelaySeconds: '4' }))).name).toBe('QueueNameExists');
  });

  it('refuses bad names, unknown and read-only attributes, and values out of bounds', async () => {
    expect((await failure(create('has space'))).name).toBe('InvalidParameterValue');
    expect((await failure(create('x'.repeat(81)))).name).toBe('InvalidParameterValue');
    const cases: [Record<string, string>, string][] = [
      [{ Nonsense: '1' }, 'InvalidAttributeName'],
      [{ QueueArn: 'arn' }, 'InvalidAttributeName'],
      [{ VisibilityTimeout: '43201' }, 'InvalidAttributeValue'],
      [{ VisibilityTimeout: '-1' }, 'InvalidAttributeValue'],
      [{ DelaySeconds: '901' }, 'InvalidAttributeValue'],
      [{ ReceiveMessageWaitTimeSeconds: '21' }, 'InvalidAttributeValue'],
      [{ MessageRetentionPeriod: '59' }, 'InvalidAttributeValue'],
      [{ MaximumMessageSize: '1023' }, 'InvalidAttributeValue'],
      [{ SqsManagedSseEnabled: 'yes' }, 'InvalidAttributeValue'],
      [{ ContentBasedDeduplication: 'true' }, 'InvalidAttributeName'],
    ];
    for (const [attributes, shape] of cases) {
      const name = freshName('bad');
      expect((await failure(create(name, attributes))).name, JSON.stringify(attributes)).toBe(
        shape,
      );
      expect((await call(server().baseUrl, 'GET', `/v1/queues/${name}`)).status).toBe(404);
    }
  });

  it('a redrive policy naming no queue is refused; FifoQueue=false is a standard queue (FIFO queues: fifo-queues.test.ts)', async () => {
    const redrive = await failure(
      create(freshName('r'), {
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: 'arn:x', maxReceiveCount: 3 }),
      }),
    );
    expect(redrive.name).toBe('InvalidParameterValue');
    expect(redrive.message).toContain('Dead letter target does not exist');
    // FifoQueue=false and an empty RedrivePolicy say "standard, no redrive": accepted.
    const plain = await create(freshName('p'), { FifoQueue: 'false', RedrivePolicy: '' });
    expect(plain.QueueUrl).toBeDefined();
  });
});

describe('queue attributes', () => {
  it('keeps a policy only as a JSON object, and forgets one set to ""', async () => {
    const url = (await create(freshName('policy'), { Policy: '{"Version":"2012-10-17"}' }))
      .QueueUrl as string;
    const bad = await failure(
      server().client.send(
        new SetQueueAttributesCommand({
          QueueUrl: url,
          Attributes: { RedriveAllowPolicy: 'notjson', Policy: '' },
        }),
      ),
    );
    expect(bad).toMatchObject({ name: 'InvalidAttributeValue', status: 400 });
    // Refused whole: the policy is still there.
    expect(await attributesOf(url, ['Policy'])).toEqual({ Policy: '{"Version":"2012-10-17"}' });
    await server().client.send(
      new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { Policy: '' } }),
    );
    expect(await attributesOf(url, ['Policy'])).toEqual({});
    expect(Object.keys(await attributesOf(url))).not.toContain('Policy');
    await server().client.send(
      new SetQueueAttributesCommand({
        QueueUrl: url,
        Attributes: { RedriveAllowPolicy: '{"redrivePermission":"allowAll"}' },
      }),
    );
    expect(await attributesOf(url, ['RedriveAllowPolicy'])).toEqual({
      RedriveAllowPolicy: '{"redrivePermission":"allowAll"}',
    });
  });

  it('refuses SetQueueAttributes without Attributes with MissingParameter, as SQS does', async () => {
    const url = (await create(freshName('noattrs'), { DelaySeconds: '3' })).QueueUrl as string;
    const missing = await failure(
      server().client.send(new SetQueueAttributesCommand({ QueueUrl: url } as never)),
    );
    expect(missing).toMatchObject({
      name: 'MissingParameter',
      status: 400,
      message: 'The request must contain the parameter Attributes.',
    });
    expect(await attributesOf(url, ['DelaySeconds'])).toEqual({ DelaySeconds: '3' });
  });

  it('reads every attribute, sets them, and keeps what leaseq does not act on', async () => {
    const name = freshName('attrs');
    const { QueueUrl } = await create(name, { Policy: '{"Version":"2012-10-17"}' });
    const url = QueueUrl as string;
    const before = await attributesOf(url);
    expect(before).toMatchObject({
      ApproximateNumberOfMessages: '0',
      ApproximateNumberOfMessagesNotVisible: '0',
      ApproximateNumberOfMessagesDelayed: '0',
      VisibilityTimeout: '30',
      DelaySeconds: '0',
      ReceiveMessageWaitTimeSeconds: '0',
      MessageRetentionPeriod: '345600',
      MaximumMessageSize: '1048576',
      QueueArn: `arn:aws:sqs:us-east-1:000000000000:${name}`,
      Policy: '{"Version":"2012-10-17"}',
    });
    expect(Number(before.CreatedTimestamp)).toBeGreaterThan(1_600_000_000);
    await server().client.send(
      new SetQueueAttributesCommand({
        QueueUrl: url,
        Attributes: { VisibilityTimeout: '0', MessageRetentionPeriod: '60', KmsMasterKeyId: 'k' },
      }),
    );
    expect(await attributesOf(url, ['VisibilityTimeout', 'MessageRetentionPeriod'])).toEqual({
      VisibilityTimeout: '0',
      MessageRetentionPeriod: '60',
    });
    expect(
      (await call(server().baseUrl, 'GET', `/v1/queues/${name}`)).body.options.visibility,
    ).toBe(1);
    await server().client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x' }));
    expect(
      (await attributesOf(url, ['ApproximateNumberOfMessages'])).ApproximateNumberOfMessages,
    ).toBe('1');
    const bad = await failure(
      server().client.send(
        new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { VisibilityTimeout: 'x' } }),
      ),
    );
    expect(bad.name).toBe('InvalidAttributeValue');
    expect((await failure(attributesOf(url, ['Bogus' as QueueAttributeName]))).name).toBe(
      'InvalidAttributeName',
    );
    expect(await attributesOf(url, [])).toEqual({});
  });

  it('queues made through /v1 answer too', async () => {
    const name = freshName('v1');
    await call(server().baseUrl, 'PUT', `/v1/queues/${name}`, { body: { visibility: 7000 } });
    const { QueueUrl } = await server().client.send(new GetQueueUrlCommand({ QueueName: name }));
    expect(await attributesOf(QueueUrl as string, ['VisibilityTimeout'])).toEqual({
      VisibilityTimeout: '7',
    });
  });
});

describe('GetQueueUrl, ListQueues, DeleteQueue, tags', () => {
  it('lists by prefix, in pages', async () => {
    const prefix = freshName('list');
    for (const suffix of ['a', 'b', 'c']) await create(`${prefix}-${suffix}`);
    const all = await server().client.send(new ListQueuesCommand({ QueueNamePrefix: prefix }));
    expect(all.QueueUrls?.map((url) => url.split('/').pop())).toEqual([
      `${prefix}-a`,
      `${prefix}-b`,
      `${prefix}-c`,
    ]);
    const first = await server().client.send(
      new ListQueuesCommand({ QueueNamePrefix: prefix, MaxResults: 2 }),
    );
    expect(first.QueueUrls).toHaveLength(2);
    const second = await server().client.send(
      new ListQueuesCommand({ QueueNamePrefix: prefix, MaxResults: 2, NextToken: first.NextToken }),
    );
    expect(second.QueueUrls?.map((url) => url.split('/').pop())).toEqual([`${prefix}-c`]);
    expect(second.NextToken).toBeUndefined();
    const none = await server().client.send(new ListQueuesCommand({ QueueNamePrefix: 'zzz-none' }));
    expect(none.QueueUrls ?? []).toEqual([]);
    expect(
      (await failure(server().client.send(new ListQueuesCommand({ MaxResults: 1001 })))).name,
    ).toBe('InvalidParameterValue');
    // A token this endpoint never made is no place in the list: not read as the end of it.
    for (const NextToken of ['garbage!', 'Zm9vIGJhcg', '']) {
      const bad = await failure(
        server().client.send(new ListQueuesCommand({ MaxResults: 2, NextToken })),
      );
      expect(bad, NextToken).toMatchObject({ name: 'InvalidParameterValue' });
      expect(bad.message).toContain('NextToken');
    }
  });

  it('deletes at once; the queue is gone for /v1 too', async () => {
    const name = freshName('del');
    const { QueueUrl } = await create(name);
    await server().client.send(new DeleteQueueCommand({ QueueUrl }));
    expect((await call(server().baseUrl, 'GET', `/v1/queues/${name}`)).status).toBe(404);
    const gone = await failure(server().client.send(new GetQueueUrlCommand({ QueueName: name })));
    expect(gone).toMatchObject({ name: 'QueueDoesNotExist', status: 400 });
    expect((await failure(server().client.send(new DeleteQueueCommand({ QueueUrl })))).name).toBe(
      'QueueDoesNotExist',
    );
  });

  it('tags: set at creation, added, removed, listed', async () => {
    const { QueueUrl } = await create(freshName('tags'), {}, { team: 'a' });
    await server().client.send(new TagQueueCommand({ QueueUrl, Tags: { env: 'prod', team: 'b' } }));
    await server().client.send(new UntagQueueCommand({ QueueUrl, TagKeys: ['env'] }));
    const listed = await server().client.send(new ListQueueTagsCommand({ QueueUrl }));
    expect(listed.Tags).toEqual({ team: 'b' });
  });

  it('accepts a QueueUrl of any host, as apps hard-code AWS ones', async () => {
    const name = freshName('aws');
    await create(name);
    const awsUrl = `https://sqs.eu-west-1.amazonaws.com/123456789012/${name}`;
    const sent = await server().client.send(
      new SendMessageCommand({ QueueUrl: awsUrl, MessageBody: 'x' }),
    );
    expect(sent.MessageId).toBeDefined();
  });
});

describe('PurgeQueue', () => {
  it('removes ready, delayed and in-flight messages at once; their handles then delete nothing', async () => {
    const { QueueUrl } = await create(freshName('purge'));
    for (const body of ['a', 'b', 'c']) {
      await server().client.send(new SendMessageCommand({ QueueUrl, MessageBody: body }));
    }
    await server().client.send(
      new SendMessageCommand({ QueueUrl, MessageBody: 'later', DelaySeconds: 60 }),
    );
    const [held] =
      (await server().client.send(new ReceiveMessageCommand({ QueueUrl }))).Messages ?? [];
    await server().client.send(new PurgeQueueCommand({ QueueUrl }));
    expect(await attributesOf(QueueUrl as string, ['All'])).toMatchObject({
      ApproximateNumberOfMessages: '0',
      ApproximateNumberOfMessagesNotVisible: '0',
      ApproximateNumberOfMessagesDelayed: '0',
    });
    // The purged message is gone: its handle's delete succeeds, deleting nothing.
    await server().client.send(
      new DeleteMessageCommand({ QueueUrl, ReceiptHandle: held?.ReceiptHandle }),
    );
    await server().client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'after' }));
    const [after] =
      (await server().client.send(new ReceiveMessageCommand({ QueueUrl }))).Messages ?? [];
    expect(after?.Body).toBe('after');
  });
});

describe('what leaseq does not have', () => {
  it('permissions answer UnsupportedOperation; a move from a queue that is no DLQ is refused, changing nothing', async () => {
    const { QueueUrl } = await create(freshName('dlq'));
    await server().client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'kept' }));
    const sources = await server().client.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl }));
    expect(sources.queueUrls).toEqual([]);
    const move = await failure(
      server().client.send(new StartMessageMoveTaskCommand({ SourceArn: 'arn:aws:sqs:x:y:z' })),
    );
    expect(move.name).toBe('ResourceNotFoundException');
    const permission = await failure(
      server().client.send(
        new AddPermissionCommand({
          QueueUrl,
          Label: 'l',
          AWSAccountIds: ['1'],
          Actions: ['SendMessage'],
        }),
      ),
    );
    expect(permission.message).toContain('API keys');
    expect((await attributesOf(QueueUrl as string)).ApproximateNumberOfMessages).toBe('1');
  });

  it('an unknown action is InvalidAction', async () => {
    const answer = await fetch(`${server().baseUrl}/sqs/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'AmazonSQS.FlyToTheMoon',
      },
      body: '{}',
    });
    expect(answer.status).toBe(400);
    expect(answer.headers.get('x-amzn-query-error')).toBe('InvalidAction;Sender');
    expect(await answer.json()).toMatchObject({ __type: 'com.amazonaws.sqs#InvalidAction' });
    const notJson = await fetch(`${server().baseUrl}/sqs/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'AmazonSQS.ListQueues',
      },
      body: '{"unterminated',
    });
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { __type: string }).__type).toBe(
      'com.amazonaws.sqs#SerializationException',
    );
    const tooLarge = await fetch(`${server().baseUrl}/sqs/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'AmazonSQS.SendMessage',
      },
      body: JSON.stringify({ QueueUrl: 'q', MessageBody: 'x'.repeat(5 * 1024 * 1024) }),
    });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers.get('x-amzn-query-error')).toBe('RequestEntityTooLarge;Sender');
    const plainRoot = await fetch(`${server().baseUrl}/`, { method: 'POST', body: 'x' });
    expect(plainRoot.status).toBe(404);
  });
});

describe('metrics', () => {
  it('count requests per action and result, with latency', async () => {
    await failure(
      server().client.send(new GetQueueUrlCommand({ QueueName: 'missing-for-metrics' })),
    );
    const { QueueUrl } = await create(freshName('metrics'));
    await server().client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
    const text = await (await fetch(`${server().baseUrl}/metrics`)).text();
    expect(text).toMatch(/leaseq_sqs_requests_total\{action="SendMessage",code="OK"\} [1-9]/);
    expect(text).toMatch(
      /leaseq_sqs_requests_total\{action="GetQueueUrl",code="QueueDoesNotExist"\} [1-9]/,
    );
    expect(text).toMatch(
      /leaseq_sqs_requests_total\{action="unknown",code="InvalidAction"\} [1-9]/,
    );
    expect(text).toContain(
      'leaseq_sqs_request_duration_seconds_bucket{le="0.005",action="SendMessage"}',
    );
  });
});

describe('metrics before any SQS request', () => {
  it('write each action success series at 0, so that the first request counts as an increase', async () => {
    const fresh = await startSqsServer();
    try {
      const text = await (await fetch(`${fresh.baseUrl}/metrics`)).text();
      for (const action of ['SendMessage', 'ReceiveMessage', 'DeleteMessage', 'CreateQueue']) {
        expect(text).toContain(`leaseq_sqs_requests_total{action="${action}",code="OK"} 0`);
        expect(text).toContain(`leaseq_sqs_request_duration_seconds_count{action="${action}"} 0`);
      }
      expect(text).not.toContain('action="unknown"');
    } finally {
      await fresh.close();
    }
  });
});

describe('names that are Object members', () => {
  it('are unknown attributes, plain message attributes, and refused query parameters', async () => {
    for (const name of ['constructor', '__proto__', 'toString']) {
      expect((await failure(create(freshName('proto'), { [name]: '1' }))).name).toBe(
        'InvalidAttributeName',
      );
    }
    const { QueueUrl } = await create(freshName('proto'));
    const attributes = JSON.parse('{"__proto__":{"DataType":"String","StringValue":"p"}}');
    await server().client.send(
      new SendMessageCommand({ QueueUrl, MessageBody: 'x', MessageAttributes: attributes }),
    );
    const [message] =
      (
        await server().client.send(
          new ReceiveMessageCommand({ QueueUrl, MessageAttributeNames: ['All'] }),
        )
      ).Messages ?? [];
    expect(Object.keys(message?.MessageAttributes ?? {})).toEqual(['__proto__']);
    const polluting = await fetch(`${server().baseUrl}/sqs/`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'Action=ListQueues&__proto__.polluted=yes',
    });
    expect(polluting.status).toBe(400);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // A name an object inherits (toString) is no parameter list or map to write into.
    for (const body of [
      'Action=ListQueues&toString.1=yes',
      'Action=ListQueues&hasOwnProperty.x.y=yes',
    ]) {
      const inherited = await fetch(`${server().baseUrl}/sqs/`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
      expect(inherited.status, body).toBe(200);
    }
    expect(Object.hasOwn(Object.prototype.toString, '1')).toBe(false);
    expect(Object.hasOwn(Object.prototype.hasOwnProperty, 'x')).toBe(false);
  });
});
