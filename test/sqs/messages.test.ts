import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  type MessageSystemAttributeName,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { call } from '../server/helpers.js';
import { failure, freshName, sqsServer } from './helpers.js';

const server = sqsServer();

async function createQueue(attributes: Record<string, string> = {}): Promise<string> {
  const answer = await server().client.send(
    new CreateQueueCommand({ QueueName: freshName(), Attributes: attributes }),
  );
  return answer.QueueUrl as string;
}

const send = (QueueUrl: string, MessageBody: string, extra: object = {}) =>
  server().client.send(new SendMessageCommand({ QueueUrl, MessageBody, ...extra }));

const receive = (QueueUrl: string, extra: object = {}) =>
  server()
    .client.send(new ReceiveMessageCommand({ QueueUrl, ...extra }))
    .then((answer) => answer.Messages ?? []);

describe('SendMessage and ReceiveMessage', () => {
  it('round-trip body, message attributes, MD5s and system attributes', async () => {
    const url = await createQueue();
    const before = Date.now();
    const sent = await send(url, 'hello', {
      MessageAttributes: {
        attribName1: { DataType: 'String', StringValue: 'attribValue 1' },
        'trace.id': { DataType: 'Number.int', StringValue: '42' },
        blob: { DataType: 'Binary.raw', BinaryValue: Buffer.from([0, 1, 2, 255]) },
      },
      MessageGroupId: 'g1',
    });
    expect(sent.MD5OfMessageBody).toBe('5d41402abc4b2a76b9719d911017c592');
    expect(sent.MD5OfMessageAttributes).toMatch(/^[0-9a-f]{32}$/);
    const [message] = await receive(url, {
      MessageAttributeNames: ['All'],
      MessageSystemAttributeNames: ['All'],
    });
    expect(message?.MessageId).toBe(sent.MessageId);
    expect(message?.Body).toBe('hello');
    expect(message?.MD5OfBody).toBe(sent.MD5OfMessageBody);
    expect(message?.MD5OfMessageAttributes).toBe(sent.MD5OfMessageAttributes);
    expect(message?.MessageAttributes?.blob?.BinaryValue).toEqual(new Uint8Array([0, 1, 2, 255]));
    expect(message?.MessageAttributes?.['trace.id']).toEqual({
      DataType: 'Number.int',
      StringValue: '42',
    });
    const attributes = message?.Attributes ?? {};
    expect(attributes.ApproximateReceiveCount).toBe('1');
    expect(attributes.SenderId).toBe('loopback');
    expect(attributes.MessageGroupId).toBe('g1');
    const sentAt = Number(attributes.SentTimestamp);
    expect(sentAt).toBeGreaterThanOrEqual(before);
    expect(Number(attributes.ApproximateFirstReceiveTimestamp)).toBeGreaterThanOrEqual(sentAt);
    expect((attributes as Record<string, string>).LeaseqFencingToken).toBeUndefined();
  });

  it('LeaseqFencingToken, when named, is the delivery token: larger on every redelivery', async () => {
    const url = await createQueue();
    await send(url, 'fenced');
    // Not in the SDK's enum of names: a string the SDK passes on as it is.
    const names = ['LeaseqFencingToken', 'ApproximateReceiveCount'] as MessageSystemAttributeName[];
    const [first] = await receive(url, {
      MessageSystemAttributeNames: names,
      VisibilityTimeout: 0,
    });
    const [second] = await receive(url, { MessageSystemAttributeNames: names });
    const tokens = [first, second].map((m) =>
      Number(((m?.Attributes ?? {}) as Record<string, string>).LeaseqFencingToken),
    );
    expect(tokens[0]).toBeGreaterThan(0);
    expect(tokens[1]).toBeGreaterThan(tokens[0] as number);
  });

  it('MD5OfMessageAttributes is that of the attributes returned (published vector)', async () => {
    const url = await createQueue();
    const sent = await send(url, 'x', {
      MessageAttributes: {
        attribName1: { DataType: 'String', StringValue: 'attribValue 1' },
        other: { DataType: 'String', StringValue: 'o' },
      },
    });
    const [only] = await receive(url, {
      MessageAttributeNames: ['attribName1'],
      VisibilityTimeout: 0,
    });
    expect(only?.MD5OfMessageAttributes).toBe('19e27d4e946b072f3f58da80d94fd778');
    expect(Object.keys(only?.MessageAttributes ?? {})).toEqual(['attribName1']);
    const [none] = await receive(url, { MessageAttributeNames: [] });
    expect(none?.MessageAttributes).toBeUndefined();
    expect(none?.MD5OfMessageAttributes).toBeUndefined();
    expect(none?.MessageId).toBe(sent.MessageId);
  });

  it('answers no Messages when the queue is empty', async () => {
    const url = await createQueue();
    const answer = await server().client.send(new ReceiveMessageCommand({ QueueUrl: url }));
    expect(answer.Messages).toBeUndefined();
  });

  it('batches: entries that fail their checks fail alone', async () => {
    const url = await createQueue();
    const answer = await server().client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'good-1', MessageBody: 'one' },
          { Id: 'bad_body', MessageBody: 'nul \u0000 here' },
          {
            Id: 'bad-attr',
            MessageBody: 'x',
            MessageAttributes: { 'AWS.reserved': { DataType: 'String', StringValue: 'v' } },
          },
          { Id: 'good-2', MessageBody: 'two', DelaySeconds: 0 },
        ],
      }),
    );
    expect(answer.Successful?.map((entry) => entry.Id)).toEqual(['good-1', 'good-2']);
    expect(answer.Failed).toEqual([
      expect.objectContaining({
        Id: 'bad_body',
        SenderFault: true,
        Code: 'InvalidMessageContents',
      }),
      expect.objectContaining({ Id: 'bad-attr', SenderFault: true, Code: 'InvalidParameterValue' }),
    ]);
    const bodies = (await receive(url, { MaxNumberOfMessages: 10 })).map((m) => m.Body);
    expect(bodies.sort()).toEqual(['one', 'two']);
  });

  it('batches: whole-request errors', async () => {
    const url = await createQueue();
    const batch = (Entries: { Id: string; MessageBody: string }[]) =>
      failure(server().client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries })));
    expect(await batch([])).toMatchObject({
      name: 'EmptyBatchRequest',
      code: 'AWS.SimpleQueueService.EmptyBatchRequest',
    });
    const eleven = Array.from({ length: 11 }, (_, i) => ({ Id: `m${i}`, MessageBody: 'x' }));
    expect((await batch(eleven)).name).toBe('TooManyEntriesInBatchRequest');
    const twice = [
      { Id: 'a', MessageBody: 'x' },
      { Id: 'a', MessageBody: 'y' },
    ];
    expect((await batch(twice)).name).toBe('BatchEntryIdsNotDistinct');
    expect((await batch([{ Id: 'no spaces', MessageBody: 'x' }])).name).toBe('InvalidBatchEntryId');
    const big = 'x'.repeat(200_000);
    const heavy = Array.from({ length: 6 }, (_, i) => ({ Id: `m${i}`, MessageBody: big }));
    expect((await batch(heavy)).name).toBe('BatchRequestTooLong');
    expect(await receive(url)).toEqual([]);
  });
});

describe('long polls', () => {
  it('wake on a send', async () => {
    const url = await createQueue();
    const started = Date.now();
    const waiting = receive(url, { WaitTimeSeconds: 10 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await send(url, 'wake up');
    const messages = await waiting;
    expect(messages.map((m) => m.Body)).toEqual(['wake up']);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('wake when a delayed message comes due', async () => {
    const url = await createQueue({ DelaySeconds: '1' });
    const started = Date.now();
    await send(url, 'later');
    const attributes = await server().client.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessagesDelayed', 'ApproximateNumberOfMessages'],
      }),
    );
    expect(attributes.Attributes).toEqual({
      ApproximateNumberOfMessagesDelayed: '1',
      ApproximateNumberOfMessages: '0',
    });
    const messages = await receive(url, { WaitTimeSeconds: 8 });
    expect(messages.map((m) => m.Body)).toEqual(['later']);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(6000);
  });

  it('end at once with QueueDoesNotExist, in SQS words, when the queue is deleted mid-wait', async () => {
    // First a long poll of another queue woken by a visibility change, as an app's other loop.
    const other = await createQueue({ VisibilityTimeout: '30' });
    await send(other, 'm');
    const [held] = await receive(other);
    const woken = receive(other, { WaitTimeSeconds: 10 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await server().client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: other,
        ReceiptHandle: held?.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    expect(await woken).toHaveLength(1);
    const url = await createQueue();
    const started = Date.now();
    const waiting = failure(receive(url, { WaitTimeSeconds: 5 }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await server().client.send(new DeleteQueueCommand({ QueueUrl: url }));
    expect(await waiting).toMatchObject({
      name: 'QueueDoesNotExist',
      message: 'The specified queue does not exist.',
      status: 400,
    });
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('wake when a visibility change shortens a lease, and on VisibilityTimeout 0', async () => {
    const url = await createQueue({ VisibilityTimeout: '60' });
    await send(url, 'm');
    const [first] = await receive(url);
    const waiting = receive(url, { WaitTimeSeconds: 10, MessageSystemAttributeNames: ['All'] });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const changedAt = Date.now();
    await server().client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: url,
        ReceiptHandle: first?.ReceiptHandle,
        VisibilityTimeout: 1,
      }),
    );
    const [second] = await waiting;
    expect(second?.MessageId).toBe(first?.MessageId);
    expect(second?.Attributes?.ApproximateReceiveCount).toBe('2');
    expect(Date.now() - changedAt).toBeLessThan(5000);
    const next = receive(url, { WaitTimeSeconds: 10 });
    await server().client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: url,
        ReceiptHandle: second?.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    expect((await next).map((m) => m.MessageId)).toEqual([first?.MessageId]);
  });
});

describe('receipt handles', () => {
  it('redelivery after the visibility timeout: a new handle, ApproximateReceiveCount 2', async () => {
    const url = await createQueue();
    await send(url, 'again');
    const [first] = await receive(url, { VisibilityTimeout: 1 });
    const [second] = await receive(url, {
      WaitTimeSeconds: 5,
      MessageSystemAttributeNames: ['ApproximateReceiveCount', 'ApproximateFirstReceiveTimestamp'],
    });
    expect(second?.MessageId).toBe(first?.MessageId);
    expect(second?.ReceiptHandle).not.toBe(first?.ReceiptHandle);
    expect(second?.Attributes?.ApproximateReceiveCount).toBe('2');
    expect(Number(second?.Attributes?.ApproximateFirstReceiveTimestamp)).toBeLessThan(Date.now());

    // The stale handle deletes nothing while the message exists …
    const stale = await failure(
      server().client.send(
        new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: first?.ReceiptHandle }),
      ),
    );
    expect(stale).toMatchObject({ name: 'InvalidParameterValue', status: 400 });
    expect(stale.message).toContain('The receipt handle has expired.');
    const changeStale = await failure(
      server().client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: first?.ReceiptHandle,
          VisibilityTimeout: 5,
        }),
      ),
    );
    expect(changeStale.name).toBe('InvalidParameterValue');
    const counts = await server().client.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }),
    );
    expect(counts.Attributes?.ApproximateNumberOfMessagesNotVisible).toBe('1');
    // … the live one does; then the stale one answers success: the message is gone.
    await server().client.send(
      new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: second?.ReceiptHandle }),
    );
    await server().client.send(
      new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: first?.ReceiptHandle }),
    );
    const notInFlight = await failure(
      server().client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: second?.ReceiptHandle,
          VisibilityTimeout: 5,
        }),
      ),
    );
    expect(notInFlight).toMatchObject({
      name: 'MessageNotInflight',
      code: 'AWS.SimpleQueueService.MessageNotInflight',
    });
    const name = url.split('/').pop() as string;
    const stats = await call(server().baseUrl, 'GET', `/v1/queues/${name}/stats`);
    expect(stats.body.staleAcks).toBe(2);
    expect(stats.body.acks).toBe(1);
  });

  it('forged, garbled and other queues’ handles are ReceiptHandleIsInvalid', async () => {
    const url = await createQueue();
    const other = await createQueue();
    await send(other, 'x');
    const [foreign] = await receive(other);
    for (const handle of ['garbage', `${foreign?.ReceiptHandle}x`, foreign?.ReceiptHandle]) {
      const refused = await failure(
        server().client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: handle })),
      );
      expect(refused).toMatchObject({ name: 'ReceiptHandleIsInvalid', status: 404 });
    }
    // Still in flight in its own queue: nothing was deleted or released.
    expect(await receive(other)).toEqual([]);
  });

  it('DeleteMessageBatch: a bad handle fails alone', async () => {
    const url = await createQueue();
    await send(url, 'a');
    await send(url, 'b');
    const messages = await receive(url, { MaxNumberOfMessages: 10 });
    expect(messages).toHaveLength(2);
    const answer = await server().client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'one', ReceiptHandle: messages[0]?.ReceiptHandle },
          { Id: 'forged', ReceiptHandle: 'AAAA' },
          { Id: 'two', ReceiptHandle: messages[1]?.ReceiptHandle },
        ],
      }),
    );
    expect(answer.Successful?.map((entry) => entry.Id)).toEqual(['one', 'two']);
    expect(answer.Failed).toEqual([
      expect.objectContaining({ Id: 'forged', Code: 'ReceiptHandleIsInvalid', SenderFault: true }),
    ]);
    const attributes = await server().client.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }),
    );
    expect(attributes.Attributes?.ApproximateNumberOfMessages).toBe('0');
    expect(attributes.Attributes?.ApproximateNumberOfMessagesNotVisible).toBe('0');
  });
});

describe('bad parameters change nothing', () => {
  it('are refused with SQS’s error and message', async () => {
    const url = await createQueue({ MaximumMessageSize: '1024' });
    const eleven = await failure(receive(url, { MaxNumberOfMessages: 11 }));
    expect(eleven).toMatchObject({ name: 'InvalidParameterValue', code: 'InvalidParameterValue' });
    expect(eleven.message).toBe(
      'Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.',
    );
    expect((await failure(receive(url, { WaitTimeSeconds: 21 }))).name).toBe(
      'InvalidParameterValue',
    );
    expect((await failure(receive(url, { VisibilityTimeout: 43_201 }))).name).toBe(
      'InvalidParameterValue',
    );
    expect((await failure(receive(url, { AttributeNames: ['Nonsense'] }))).name).toBe(
      'InvalidAttributeName',
    );
    expect((await failure(send(url, ''))).name).toBe('MissingParameter');
    expect((await failure(send(url, 'bad \uffff'))).name).toBe('InvalidMessageContents');
    expect((await failure(send(url, 'lone \ud800 surrogate'))).name).toBe('InvalidMessageContents');
    expect((await failure(send(url, 'x'.repeat(1025)))).message).toContain(
      'Message must be shorter than 1024 bytes.',
    );
    expect((await failure(send(url, 'x', { DelaySeconds: 901 }))).name).toBe(
      'InvalidParameterValue',
    );
    const noValue = await failure(
      send(url, 'x', { MessageAttributes: { a: { DataType: 'String' } } }),
    );
    expect(noValue.message).toContain("must contain a non-empty value of type 'String'");
    const notNumber = await failure(
      send(url, 'x', { MessageAttributes: { a: { DataType: 'Number', StringValue: 'ten' } } }),
    );
    expect(notNumber.name).toBe('InvalidParameterValue');
    // SQS's Number: up to 38 significant digits, a magnitude from 10^-128 to below 10^126.
    const accepted = await createQueue();
    const number = (StringValue: string, to = url) =>
      send(to, 'x', { MessageAttributes: { a: { DataType: 'Number', StringValue } } });
    for (const [value, reason] of [
      ['1234567890123456789012345678901234567891', 'it has 40 significant digits, more than 38'],
      ['-0.000123456789012345678901234567890123456789', 'it has 39 significant digits'],
      ['1e126', 'its magnitude must be from 10^-128 to below 10^126'],
      ['0.1e-128', 'its magnitude must be from 10^-128 to below 10^126'],
      ['1e99999999999999999999', 'its magnitude must be'],
    ] as const) {
      const refused = await failure(number(value));
      expect(refused.name).toBe('InvalidParameterValue');
      expect(refused.message).toContain(
        `Value ${value} for message attribute 'a' is not a valid Number: ${reason}`,
      );
    }
    const inBounds = [
      '12345678901234567890123456789012345678',
      `1${'0'.repeat(60)}`,
      '9.9999e125',
      '1e-128',
      '-0.000',
      `0.${'0'.repeat(200)}`,
    ];
    for (const value of inBounds) await number(value, accepted);
    const kept = await receive(accepted, { MaxNumberOfMessages: 10, MessageAttributeNames: ['a'] });
    expect(kept.map((m) => m.MessageAttributes?.a?.StringValue).sort()).toEqual(
      [...inBounds].sort(),
    );
    const tooMany = Object.fromEntries(
      Array.from({ length: 11 }, (_, i) => [`a${i}`, { DataType: 'String', StringValue: 'v' }]),
    );
    expect((await failure(send(url, 'x', { MessageAttributes: tooMany }))).name).toBe(
      'InvalidParameterValue',
    );
    const gone = await failure(send(url.replace(/[^/]+$/, 'no-such-queue'), 'x'));
    expect(gone).toMatchObject({
      name: 'QueueDoesNotExist',
      code: 'AWS.SimpleQueueService.NonExistentQueue',
      status: 400,
    });
    expect(await receive(url)).toEqual([]);
  });
});

describe('binary message attributes', () => {
  /** A JSON-protocol request as sent, so that a BinaryValue can be any text (the SDK encodes bytes). */
  async function raw(action: string, input: object) {
    const answer = await fetch(`${server().baseUrl}/sqs/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': `AmazonSQS.${action}`,
      },
      body: JSON.stringify(input),
    });
    return { status: answer.status, body: await answer.json() };
  }
  const binary = (BinaryValue: string) => ({ bin: { DataType: 'Binary', BinaryValue } });

  it('take canonical base64 only: malformed text is refused naming the attribute, never altered', async () => {
    const url = await createQueue();
    for (const malformed of ['==', 'AAAAA', 'QUJD=A', 'QUI', 'QUJ=', 'QU JD', 'QUJD\n']) {
      const sent = await raw('SendMessage', {
        QueueUrl: url,
        MessageBody: 'b',
        MessageAttributes: binary(malformed),
      });
      expect(sent.status, malformed).toBe(400);
      expect(sent.body.__type, malformed).toBe('com.amazonaws.sqs#InvalidParameterValue');
      expect(sent.body.message, malformed).toContain("message attribute 'bin'");
      expect(sent.body.message, malformed).toContain('not valid base64');
    }
    const empty = await raw('SendMessage', {
      QueueUrl: url,
      MessageBody: 'b',
      MessageAttributes: binary(''),
    });
    expect(empty.body.message).toContain("must contain a non-empty value of type 'Binary'");
    expect(await receive(url)).toEqual([]);
    // A bad entry of a batch fails alone.
    const batch = await raw('SendMessageBatch', {
      QueueUrl: url,
      Entries: [
        { Id: 'bad', MessageBody: 'x', MessageAttributes: binary('AAAAA') },
        { Id: 'good', MessageBody: 'y', MessageAttributes: binary('QUI=') },
      ],
    });
    expect(batch.body.Successful.map((entry: { Id: string }) => entry.Id)).toEqual(['good']);
    expect(batch.body.Failed).toEqual([
      expect.objectContaining({ Id: 'bad', Code: 'InvalidParameterValue', SenderFault: true }),
    ]);
    expect(batch.body.Failed[0].Message).toContain('not valid base64');
    const received = await raw('ReceiveMessage', { QueueUrl: url, MessageAttributeNames: ['All'] });
    expect(received.body.Messages.map((m: { Body: string }) => m.Body)).toEqual(['y']);
    expect(received.body.Messages[0].MessageAttributes.bin.BinaryValue).toBe('QUI=');
  });
});

describe('the same queue through /v1', () => {
  it('a leaseq consumer gets the envelope; SQS reads any payload as a body', async () => {
    const url = await createQueue();
    const name = url.split('/').pop() as string;
    const listed = await call(server().baseUrl, 'GET', '/v1/queues');
    expect(listed.body.queues.map((queue: { name: string }) => queue.name)).toContain(name);
    await send(url, '{"order":7}', {
      MessageAttributes: { kind: { DataType: 'String', StringValue: 'order' } },
    });
    const received = await call(server().baseUrl, 'POST', `/v1/queues/${name}/receive`, {
      body: {},
    });
    const [delivery] = received.body.deliveries;
    expect(delivery.payload).toMatchObject({
      body: '{"order":7}',
      sqs: {
        senderId: 'loopback',
        attributes: { kind: { DataType: 'String', StringValue: 'order' } },
      },
    });
    await call(server().baseUrl, 'POST', `/v1/queues/${name}/ack`, {
      body: { receipt: delivery.receipt },
    });
    await call(server().baseUrl, 'POST', `/v1/queues/${name}/jobs`, {
      body: { payload: { from: 'v1' } },
    });
    const [message] = await receive(url, { MessageSystemAttributeNames: ['SentTimestamp'] });
    expect(message?.Body).toBe('{"from":"v1"}');
    expect(Number(message?.Attributes?.SentTimestamp)).toBeGreaterThan(1_600_000_000_000);
    // The handle is a leaseq receipt: /v1 acks it too.
    const acked = await call(server().baseUrl, 'POST', `/v1/queues/${name}/ack`, {
      body: { receipt: message?.ReceiptHandle },
    });
    expect(acked.body).toEqual({ acked: true });
  });
});
