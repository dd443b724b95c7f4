import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { md5OfBody } from '../../src/server/sqs/md5.js';
import { freshName, queryRequest, sqsServer, xmlField } from './helpers.js';

const server = sqsServer();

const query = (params: Record<string, string>, path?: string) =>
  queryRequest(server().baseUrl, params, path);

const all = (xml: string, name: string) =>
  [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, 'g'))].map((match) => match[1]);

describe('the query protocol (form bodies, XML answers)', () => {
  it('creates, sends with attributes, receives, and deletes at the QueueUrl itself', async () => {
    const name = freshName('query');
    const created = await query({
      Action: 'CreateQueue',
      QueueName: name,
      'Attribute.1.Name': 'VisibilityTimeout',
      'Attribute.1.Value': '12',
      'Tag.1.Key': 'team',
      'Tag.1.Value': 'a',
    });
    expect(created.status).toBe(200);
    expect(created.type).toBe('text/xml');
    expect(created.xml).toContain(
      '<CreateQueueResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><CreateQueueResult>',
    );
    const url = xmlField(created.xml, 'QueueUrl') as string;
    expect(url).toBe(`${server().baseUrl}/sqs/000000000000/${name}`);

    const sent = await query({
      Action: 'SendMessage',
      QueueUrl: url,
      MessageBody: 'a < b & c',
      'MessageAttribute.1.Name': 'attribName1',
      'MessageAttribute.1.Value.DataType': 'String',
      'MessageAttribute.1.Value.StringValue': 'attribValue 1',
    });
    expect(xmlField(sent.xml, 'MD5OfMessageBody')).toBe(md5OfBody('a < b & c'));
    expect(xmlField(sent.xml, 'MD5OfMessageAttributes')).toBe('19e27d4e946b072f3f58da80d94fd778');

    const received = await query({
      Action: 'ReceiveMessage',
      QueueUrl: url,
      'AttributeName.1': 'All',
      'MessageAttributeName.1': 'All',
    });
    expect(xmlField(received.xml, 'Body')).toBe('a &#60; b &#38; c');
    expect(received.xml).toContain(
      '<MessageAttribute><Name>attribName1</Name><Value><DataType>String</DataType><StringValue>attribValue 1</StringValue></Value></MessageAttribute>',
    );
    expect(received.xml).toContain(
      '<Attribute><Name>ApproximateReceiveCount</Name><Value>1</Value></Attribute>',
    );
    const handle = xmlField(received.xml, 'ReceiptHandle') as string;

    // Posted to the QueueUrl's path, without a QueueUrl parameter.
    const deleted = await query(
      { Action: 'DeleteMessage', ReceiptHandle: handle },
      `/sqs/000000000000/${name}`,
    );
    expect(deleted.status).toBe(200);
    expect(deleted.xml).toContain('<DeleteMessageResponse');
    const attributes = await query({
      Action: 'GetQueueAttributes',
      QueueUrl: url,
      'AttributeName.1': 'VisibilityTimeout',
      'AttributeName.2': 'ApproximateNumberOfMessagesNotVisible',
    });
    expect(all(attributes.xml, 'Value')).toEqual(['12', '0']);
    const tags = await query({ Action: 'ListQueueTags', QueueUrl: url });
    expect(tags.xml).toContain('<Tag><Key>team</Key><Value>a</Value></Tag>');
  });

  it('batches carry their entries and per-entry failures', async () => {
    const name = freshName('qbatch');
    const url = xmlField((await query({ Action: 'CreateQueue', QueueName: name })).xml, 'QueueUrl');
    const batch = await query({
      Action: 'SendMessageBatch',
      QueueUrl: url as string,
      'SendMessageBatchRequestEntry.1.Id': 'ok',
      'SendMessageBatchRequestEntry.1.MessageBody': 'fine',
      'SendMessageBatchRequestEntry.2.Id': 'bad',
      'SendMessageBatchRequestEntry.2.MessageBody': 'x',
      'SendMessageBatchRequestEntry.2.DelaySeconds': '901',
    });
    expect(batch.status).toBe(200);
    expect(batch.xml).toMatch(/<SendMessageBatchResultEntry><Id>ok<\/Id><MessageId>/);
    expect(batch.xml).toContain(
      '<BatchResultErrorEntry><Id>bad</Id><SenderFault>true</SenderFault><Code>InvalidParameterValue</Code>',
    );
  });

  it('FIFO queues: the FIFO members and the SequenceNumber travel as flattened members and XML', async () => {
    const name = `${freshName('query')}.fifo`;
    const created = await query({
      Action: 'CreateQueue',
      QueueName: name,
      'Attribute.1.Name': 'FifoQueue',
      'Attribute.1.Value': 'true',
      'Attribute.2.Name': 'ContentBasedDeduplication',
      'Attribute.2.Value': 'true',
    });
    const url = xmlField(created.xml, 'QueueUrl') as string;
    const first = await query({
      Action: 'SendMessage',
      QueueUrl: url,
      MessageBody: 'one',
      MessageGroupId: 'g',
    });
    const repeat = await query({
      Action: 'SendMessage',
      QueueUrl: url,
      MessageBody: 'one',
      MessageGroupId: 'g',
    });
    expect(xmlField(first.xml, 'SequenceNumber')).toMatch(/^\d{20}$/);
    expect(xmlField(repeat.xml, 'MessageId')).toBe(xmlField(first.xml, 'MessageId'));
    expect(xmlField(repeat.xml, 'SequenceNumber')).toBe(xmlField(first.xml, 'SequenceNumber'));
    const batch = await query({
      Action: 'SendMessageBatch',
      QueueUrl: url,
      'SendMessageBatchRequestEntry.1.Id': 'ok',
      'SendMessageBatchRequestEntry.1.MessageBody': 'two',
      'SendMessageBatchRequestEntry.1.MessageGroupId': 'g',
      'SendMessageBatchRequestEntry.2.Id': 'bad',
      'SendMessageBatchRequestEntry.2.MessageBody': 'three',
    });
    expect(all(batch.xml, 'Code')).toEqual(['MissingParameter']);
    const received = await query({
      Action: 'ReceiveMessage',
      QueueUrl: url,
      MaxNumberOfMessages: '10',
      'MessageSystemAttributeName.1': 'MessageGroupId',
      'MessageSystemAttributeName.2': 'SequenceNumber',
    });
    expect(all(received.xml, 'Body')).toEqual(['one']);
    expect(all(received.xml, 'Value')).toEqual(['g', xmlField(first.xml, 'SequenceNumber')]);
  });

  it('a Binary attribute that is not canonical base64 is refused naming it, in a send and in a batch entry', async () => {
    const url = xmlField(
      (await query({ Action: 'CreateQueue', QueueName: freshName('qbin') })).xml,
      'QueueUrl',
    ) as string;
    const attribute = (prefix: string, value: string) => ({
      [`${prefix}MessageAttribute.1.Name`]: 'bin',
      [`${prefix}MessageAttribute.1.Value.DataType`]: 'Binary',
      [`${prefix}MessageAttribute.1.Value.BinaryValue`]: value,
    });
    for (const malformed of ['==', 'AAAAA', 'QUJD=A']) {
      const sent = await query({
        Action: 'SendMessage',
        QueueUrl: url,
        MessageBody: 'b',
        ...attribute('', malformed),
      });
      expect(sent.status, malformed).toBe(400);
      expect(xmlField(sent.xml, 'Code'), malformed).toBe('InvalidParameterValue');
      expect(xmlField(sent.xml, 'Message'), malformed).toContain('message attribute &#39;bin&#39;');
    }
    const batch = await query({
      Action: 'SendMessageBatch',
      QueueUrl: url,
      'SendMessageBatchRequestEntry.1.Id': 'bad',
      'SendMessageBatchRequestEntry.1.MessageBody': 'x',
      ...attribute('SendMessageBatchRequestEntry.1.', 'AAAAA'),
      'SendMessageBatchRequestEntry.2.Id': 'ok',
      'SendMessageBatchRequestEntry.2.MessageBody': 'y',
      ...attribute('SendMessageBatchRequestEntry.2.', 'AAA+'),
    });
    expect(batch.status).toBe(200);
    expect(batch.xml).toContain(
      '<BatchResultErrorEntry><Id>bad</Id><SenderFault>true</SenderFault><Code>InvalidParameterValue</Code>',
    );
    expect(batch.xml).toMatch(/<SendMessageBatchResultEntry><Id>ok<\/Id>/);
    const received = await query({
      Action: 'ReceiveMessage',
      QueueUrl: url,
      MaxNumberOfMessages: '10',
      'MessageAttributeName.1': 'All',
    });
    expect(all(received.xml, 'Body')).toEqual(['y']);
    expect(xmlField(received.xml, 'BinaryValue')).toBe('AAA+');
  });

  it('errors are ErrorResponse documents with the legacy code', async () => {
    const missing = await query({
      Action: 'GetQueueUrl',
      QueueName: 'no-such-queue-anywhere',
    });
    expect(missing.status).toBe(400);
    expect(missing.xml).toContain(
      '<ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><Error><Type>Sender</Type><Code>AWS.SimpleQueueService.NonExistentQueue</Code>',
    );
    const noAction = await query({});
    expect(xmlField(noAction.xml, 'Code')).toBe('MissingParameter');
    const unknown = await query({ Action: 'Teleport' });
    expect(xmlField(unknown.xml, 'Code')).toBe('InvalidAction');
  });

  it('an attribute or a name without an index is set and read, as boto 2 sends them; an entry missing its value is refused', async () => {
    const name = freshName('qunindexed');
    const url = xmlField((await query({ Action: 'CreateQueue', QueueName: name })).xml, 'QueueUrl');
    const set = await query({
      Action: 'SetQueueAttributes',
      QueueUrl: url as string,
      'Attribute.Name': 'VisibilityTimeout',
      'Attribute.Value': '35',
    });
    expect(set.status).toBe(200);
    const read = await query({
      Action: 'GetQueueAttributes',
      QueueUrl: url as string,
      AttributeName: 'VisibilityTimeout',
    });
    expect(read.xml).toContain('<Attribute><Name>VisibilityTimeout</Name><Value>35</Value>');

    for (const [entry, missing] of [
      [{ 'Attribute.2.Name': 'DelaySeconds' }, 'Attribute.2.Value'],
      [{ 'Attribute.2.Value': '5' }, 'Attribute.2.Name'],
    ] as const) {
      const refused = await query({
        Action: 'SetQueueAttributes',
        QueueUrl: url as string,
        'Attribute.1.Name': 'VisibilityTimeout',
        'Attribute.1.Value': '10',
        ...entry,
      });
      expect(refused.status).toBe(400);
      expect(xmlField(refused.xml, 'Code')).toBe('MissingParameter');
      expect(xmlField(refused.xml, 'Message')).toBe(
        `The request must contain the parameter ${missing}.`,
      );
    }
    const unchanged = await query({
      Action: 'GetQueueAttributes',
      QueueUrl: url as string,
      'AttributeName.1': 'VisibilityTimeout',
      'AttributeName.2': 'DelaySeconds',
    });
    expect(all(unchanged.xml, 'Value')).toEqual(['35', '0']);
  });

  it('names a message attribute of a batch entry missing its value by its whole parameter name', async () => {
    const name = freshName('qbatchmissing');
    const url = xmlField((await query({ Action: 'CreateQueue', QueueName: name })).xml, 'QueueUrl');
    const refused = await query({
      Action: 'SendMessageBatch',
      QueueUrl: url as string,
      'SendMessageBatchRequestEntry.1.Id': 'a',
      'SendMessageBatchRequestEntry.1.MessageBody': 'x',
      'SendMessageBatchRequestEntry.2.Id': 'b',
      'SendMessageBatchRequestEntry.2.MessageBody': 'y',
      'SendMessageBatchRequestEntry.2.MessageAttribute.1.Name': 'color',
    });
    expect(refused.status).toBe(400);
    expect(xmlField(refused.xml, 'Code')).toBe('MissingParameter');
    expect(xmlField(refused.xml, 'Message')).toBe(
      'The request must contain the parameter SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.',
    );
  });
});

describe('a job published through /v1 with text SQS never carries', () => {
  /** Characters XML 1.0 (and SQS) cannot carry: none may be in an answer. */
  const NOT_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

  it('is received as JSON text on both protocols, the XML well formed, its MD5 that of the text', async () => {
    const name = freshName('controls');
    const created = await query({ Action: 'CreateQueue', QueueName: name });
    const url = xmlField(created.xml, 'QueueUrl') as string;
    const payloads = ['a\u0001b', 'nul\u0000\uFFFE', 'plain text'];
    const published = await fetch(`${server().baseUrl}/v1/queues/${name}/jobs/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jobs: payloads.map((payload) => ({ payload })) }),
    });
    expect(published.status).toBe(200);
    const received = await query({
      Action: 'ReceiveMessage',
      QueueUrl: url,
      MaxNumberOfMessages: '10',
      VisibilityTimeout: '0',
    });
    expect(received.status).toBe(200);
    expect(received.xml).not.toMatch(NOT_XML);
    const bodies = all(received.xml, 'Body').map((body) =>
      (body as string).replace(/&#(\d+);/g, (_, code) => String.fromCharCode(Number(code))),
    );
    expect(bodies.sort()).toEqual(['"a\\u0001b"', '"nul\\u0000\\ufffe"', 'plain text']);
    const md5s = all(received.xml, 'MD5OfBody');
    expect(md5s.sort()).toEqual(bodies.map((body) => md5OfBody(body)).sort());
    // The JSON protocol answers the same bodies.
    const json = await server().client.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }),
    );
    expect((json.Messages ?? []).map((message) => message.Body).sort()).toEqual(bodies.sort());
  });
});
