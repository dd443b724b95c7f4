import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { freshName, receiveNow, sqsServer } from './helpers.js';

const server = sqsServer();

/** One AWS JSON 1.0 request as written here: the SDK always sends integers as JSON numbers. */
async function post(action: string, members: object) {
  const answer = await fetch(`${server().baseUrl}/sqs/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': `AmazonSQS.${action}`,
    },
    body: JSON.stringify(members),
  });
  return {
    status: answer.status,
    queryError: answer.headers.get('x-amzn-query-error'),
    body: (await answer.json()) as { __type?: string; message?: string; Messages?: unknown[] },
  };
}

/** What SQS answers an integer member sent as a JSON string. */
function expectSerializationError(answer: Awaited<ReturnType<typeof post>>, member: string) {
  expect(answer.status).toBe(400);
  expect(answer.queryError).toBe('SerializationException;Sender');
  expect(answer.body.__type).toBe('com.amazonaws.sqs#SerializationException');
  expect(answer.body.message).toContain('STRING_VALUE can not be converted to an Integer');
  expect(answer.body.message).toContain(member);
}

async function createQueue(): Promise<string> {
  const { QueueUrl } = await server().client.send(
    new CreateQueueCommand({ QueueName: freshName('json-int') }),
  );
  return QueueUrl as string;
}

async function counts(QueueUrl: string) {
  const { Attributes = {} } = await server().client.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }),
  );
  return {
    visible: Attributes.ApproximateNumberOfMessages,
    inFlight: Attributes.ApproximateNumberOfMessagesNotVisible,
    delayed: Attributes.ApproximateNumberOfMessagesDelayed,
  };
}

describe('integer members sent as JSON strings in the JSON protocol', () => {
  it('ReceiveMessage refuses each with SerializationException and receives nothing', async () => {
    const QueueUrl = await createQueue();
    await server().client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'kept' }));
    for (const [member, value] of [
      ['MaxNumberOfMessages', '10'],
      ['WaitTimeSeconds', '0'],
      ['VisibilityTimeout', '30'],
    ] as const) {
      expectSerializationError(await post('ReceiveMessage', { QueueUrl, [member]: value }), member);
    }
    expect(await counts(QueueUrl)).toEqual({ visible: '1', inFlight: '0', delayed: '0' });
    // The same members as JSON numbers are taken.
    const taken = await post('ReceiveMessage', {
      QueueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 0,
      VisibilityTimeout: 30,
    });
    expect(taken.status).toBe(200);
    expect(taken.body.Messages).toHaveLength(1);
  });

  it('SendMessageBatch with one entry so is refused whole and sends nothing', async () => {
    const QueueUrl = await createQueue();
    const answer = await post('SendMessageBatch', {
      QueueUrl,
      Entries: [
        { Id: 'right', MessageBody: 'a' },
        { Id: 'text', MessageBody: 'b', DelaySeconds: '5' },
      ],
    });
    expectSerializationError(answer, 'DelaySeconds');
    const single = await post('SendMessage', { QueueUrl, MessageBody: 'c', DelaySeconds: '0' });
    expectSerializationError(single, 'DelaySeconds');
    expect(await counts(QueueUrl)).toEqual({ visible: '0', inFlight: '0', delayed: '0' });
  });

  it('ChangeMessageVisibilityBatch with one entry so is refused whole and changes nothing', async () => {
    const QueueUrl = await createQueue();
    for (const body of ['a', 'b']) {
      await server().client.send(new SendMessageCommand({ QueueUrl, MessageBody: body }));
    }
    const received = await receiveNow(server().client, QueueUrl);
    expect(received).toHaveLength(2);
    const [first, second] = received;
    const answer = await post('ChangeMessageVisibilityBatch', {
      QueueUrl,
      Entries: [
        { Id: 'number', ReceiptHandle: first?.ReceiptHandle, VisibilityTimeout: 0 },
        { Id: 'text', ReceiptHandle: second?.ReceiptHandle, VisibilityTimeout: '0' },
      ],
    });
    expectSerializationError(answer, 'VisibilityTimeout');
    // Neither message was given back.
    expect(await counts(QueueUrl)).toEqual({ visible: '0', inFlight: '2', delayed: '0' });
    const single = await post('ChangeMessageVisibility', {
      QueueUrl,
      ReceiptHandle: first?.ReceiptHandle,
      VisibilityTimeout: '0',
    });
    expectSerializationError(single, 'VisibilityTimeout');
    expect(await counts(QueueUrl)).toEqual({ visible: '0', inFlight: '2', delayed: '0' });
  });

  it('ListQueues MaxResults and StartMessageMoveTask MaxNumberOfMessagesPerSecond too', async () => {
    expectSerializationError(await post('ListQueues', { MaxResults: '5' }), 'MaxResults');
    const answer = await post('StartMessageMoveTask', {
      SourceArn: 'arn:aws:sqs:us-east-1:000000000000:no-such-dead-letters',
      MaxNumberOfMessagesPerSecond: '5',
    });
    expectSerializationError(answer, 'MaxNumberOfMessagesPerSecond');
  });

  it('a member another action has is not read as an integer where the action has none', async () => {
    const QueueUrl = await createQueue();
    const answer = await post('SendMessage', { QueueUrl, MessageBody: 'x', MaxResults: '5' });
    expect(answer.status).toBe(200);
  });

  it('the query protocol still reads integers as decimal text', async () => {
    const QueueUrl = await createQueue();
    await server().client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'form' }));
    const answer = await fetch(`${server().baseUrl}/sqs/`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body: new URLSearchParams({
        Action: 'ReceiveMessage',
        Version: '2012-11-05',
        QueueUrl,
        MaxNumberOfMessages: '10',
        VisibilityTimeout: '30',
        WaitTimeSeconds: '0',
      }).toString(),
    });
    expect(answer.status).toBe(200);
    expect(await answer.text()).toContain('<Body>form</Body>');
  });
});
