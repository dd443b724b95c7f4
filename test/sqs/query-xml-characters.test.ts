import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ListQueueTagsCommand,
  SetQueueAttributesCommand,
  TagQueueCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { freshName, queryRequest, sqsServer, xmlField } from './helpers.js';

const server = sqsServer();

/** Characters XML 1.0 cannot carry, not even as character references. */
const NOT_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

const query = (params: Record<string, string>) => queryRequest(server().baseUrl, params);

describe('query protocol answers holding characters XML cannot carry', () => {
  it('an error quoting such a parameter is well-formed XML naming its code', async () => {
    const answer = await query({ Action: 'CreateQueue', QueueName: 'a\u0001b\uFFFE' });
    expect(answer.status).toBe(400);
    expect(answer.xml).not.toMatch(NOT_XML);
    expect(xmlField(answer.xml, 'Code')).toBe('InvalidParameterValue');
    expect(xmlField(answer.xml, 'Message')).toContain(
      'Value a\\u0001b\\ufffe for parameter QueueName',
    );
    const attribute = await query({
      Action: 'CreateQueue',
      QueueName: freshName('xml'),
      'Attribute.1.Name': 'Bad\u0002Name',
      'Attribute.1.Value': '1',
    });
    expect(attribute.status).toBe(400);
    expect(attribute.xml).not.toMatch(NOT_XML);
    expect(xmlField(attribute.xml, 'Code')).toBe('InvalidAttributeName');
    expect(xmlField(attribute.xml, 'Message')).toContain('Bad\\u0002Name');
  });

  it('a tag and a policy set through the JSON protocol are read back as well-formed XML', async () => {
    const { QueueUrl } = await server().client.send(
      new CreateQueueCommand({ QueueName: freshName('xml') }),
    );
    const policy = '{"note":"\uFFFE"}';
    await server().client.send(new TagQueueCommand({ QueueUrl, Tags: { team: 'a\u0001b' } }));
    await server().client.send(
      new SetQueueAttributesCommand({ QueueUrl, Attributes: { Policy: policy } }),
    );
    const tags = await query({ Action: 'ListQueueTags', QueueUrl: QueueUrl as string });
    expect(tags.status).toBe(200);
    expect(tags.xml).not.toMatch(NOT_XML);
    expect(tags.xml).toContain('<Tag><Key>team</Key><Value>a\\u0001b</Value></Tag>');
    const attributes = await query({
      Action: 'GetQueueAttributes',
      QueueUrl: QueueUrl as string,
      'AttributeName.1': 'Policy',
    });
    expect(attributes.status).toBe(200);
    expect(attributes.xml).not.toMatch(NOT_XML);
    expect(attributes.xml).toContain('\\ufffe');
    // The JSON protocol carries them as they are.
    const jsonTags = await server().client.send(new ListQueueTagsCommand({ QueueUrl }));
    expect(jsonTags.Tags).toEqual({ team: 'a\u0001b' });
    const jsonAttributes = await server().client.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['Policy'] }),
    );
    expect(jsonAttributes.Attributes?.Policy).toBe(policy);
  });
});
