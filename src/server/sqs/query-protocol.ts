import { missingParameter, SqsError } from './errors.js';
import { isRecord, type SqsInput } from './params.js';
import type { SqsProtocol } from './protocol.js';
import { toXml } from './xml.js';

const NAMESPACE = 'http://queue.amazonaws.com/doc/2012-11-05/';
const MAX_PARAMETERS = 2000;

/** Flattened list members (`AttributeName.1`) and the JSON member they become. */
const LISTS: Readonly<Record<string, string>> = {
  AttributeName: 'AttributeNames',
  MessageAttributeName: 'MessageAttributeNames',
  MessageSystemAttributeName: 'MessageSystemAttributeNames',
  TagKey: 'TagKeys',
  // Message attribute list values: refused, as SQS refuses them, once read.
  StringListValue: 'StringListValues',
  BinaryListValue: 'BinaryListValues',
};

/** Flattened maps (`Attribute.1.Name` / `.Value`): JSON member, key field, value field. */
const MAPS: Readonly<Record<string, [string, string, string]>> = {
  Attribute: ['Attributes', 'Name', 'Value'],
  Tag: ['Tags', 'Key', 'Value'],
  MessageAttribute: ['MessageAttributes', 'Name', 'Value'],
  MessageSystemAttribute: ['MessageSystemAttributes', 'Name', 'Value'],
};

/**
 * What botocore sends for an empty list, by the JSON member it becomes: the member's name with
 * no value (`AttributeNames=`, `Entries=`), where a list with items is `AttributeName.1=…`; but
 * a message attribute's list values are named after their items (`….Value.StringListValue=`).
 */
const EMPTY_LISTS: Readonly<Record<string, string>> = {
  ...Object.fromEntries([...Object.values(LISTS), 'Entries'].map((name) => [name, name])),
  StringListValue: 'StringListValues',
  BinaryListValue: 'BinaryListValues',
};

/**
 * Actions whose answer in SQS's model has no result: their XML holds only the response
 * metadata. Every other success holds its `<Action>Result`, even when empty (`<ListQueuesResult>`
 * with no queue): botocore reads the answer from that element and fails without it.
 */
const NO_RESULT = new Set([
  'AddPermission',
  'ChangeMessageVisibility',
  'DeleteMessage',
  'DeleteQueue',
  'PurgeQueue',
  'RemovePermission',
  'SetQueueAttributes',
  'TagQueue',
  'UntagQueue',
]);

type Tree = { [key: string]: Tree | string };

const UNSAFE_NAMES = new Set(['__proto__', 'constructor', 'prototype']);

/** The query protocol of older SDKs: form-encoded `Action=…&Attribute.1.Name=…`, XML answers. */
export function queryProtocol(): SqsProtocol {
  return {
    parse(request, body) {
      const search = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
      const params = [...new URLSearchParams(search), ...new URLSearchParams(body)];
      if (params.length > MAX_PARAMETERS) {
        throw new SqsError(
          'MalformedQueryString',
          `A request has at most ${MAX_PARAMETERS} parameters.`,
        );
      }
      const tree = unflatten(params);
      const action = tree.Action;
      if (typeof action !== 'string' || action === '') {
        throw new SqsError('MissingParameter', 'The request must contain the parameter Action.');
      }
      const input = translate(tree);
      // CreateQueue spells its tags in lower case in the JSON model.
      if (action === 'CreateQueue' && input.Tags !== undefined) {
        input.tags = input.Tags;
        delete input.Tags;
      }
      return { action, input };
    },
    success(reply, action, output, requestId) {
      const result = NO_RESULT.has(action) ? '' : toXml(`${action}Result`, output, action);
      return sendXml(
        reply,
        200,
        requestId,
        `<${action}Response xmlns="${NAMESPACE}">${result}<ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></${action}Response>`,
      );
    },
    failure(reply, error, requestId) {
      const detail = toXml('Error', {
        Type: error.fault,
        Code: error.legacyCode,
        Message: error.message,
      });
      return sendXml(
        reply,
        error.status,
        requestId,
        `<ErrorResponse xmlns="${NAMESPACE}">${detail}<RequestId>${requestId}</RequestId></ErrorResponse>`,
      );
    },
  };
}

function sendXml(
  reply: Parameters<SqsProtocol['failure']>[0],
  status: number,
  id: string,
  xml: string,
) {
  return reply
    .status(status)
    .header('content-type', 'text/xml')
    .header('x-amzn-requestid', id)
    .send(`<?xml version="1.0"?>${xml}`);
}

/** `a.1.b=x` → `{ a: { 1: { b: 'x' } } }`. */
function unflatten(params: [string, string][]): Tree {
  const tree: Tree = {};
  for (const [key, value] of params) {
    const parts = key.split('.');
    // Such names would reach the objects' prototypes rather than members.
    if (parts.some((part) => UNSAFE_NAMES.has(part))) {
      throw new SqsError('MalformedQueryString', `Parameter ${key.slice(0, 80)} is not valid.`);
    }
    let node = tree;
    for (const part of parts.slice(0, -1)) {
      // Own members only: `toString.1` must not write into the function objects inherit.
      const next = Object.hasOwn(node, part) ? node[part] : undefined;
      if (next === undefined || typeof next === 'string') node[part] = {};
      node = node[part] as Tree;
    }
    node[parts.at(-1) as string] = value;
  }
  return tree;
}

/**
 * The unflattened form as the JSON protocol's members. `path`: the parameters' prefix in the
 * request (`SendMessageBatchRequestEntry.2.`), which a refusal names them with.
 */
function translate(tree: Tree, path = ''): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(tree)) {
    const list = Object.hasOwn(LISTS, key) ? LISTS[key] : undefined;
    const map = Object.hasOwn(MAPS, key) ? MAPS[key] : undefined;
    const empty = value === '' && Object.hasOwn(EMPTY_LISTS, key) ? EMPTY_LISTS[key] : undefined;
    if (empty !== undefined) {
      input[empty] = [];
    } else if (list !== undefined) {
      // One item may come without an index (`AttributeName=All`), as SQS's older API versions
      // took it and boto 2 still sends it: dropped, it answered as if nothing was named.
      input[list] =
        typeof value === 'string'
          ? [value]
          : numbered(value).filter((item): item is string => typeof item === 'string');
    } else if (typeof value === 'string') {
      input[key] = value;
    } else if (map !== undefined) {
      input[map[0]] = mapEntries(`${path}${key}`, value, map);
    } else if (key.endsWith('BatchRequestEntry')) {
      input.Entries = indexed(value)
        .filter(([, entry]) => isRecord(entry))
        .map(([index, entry]) => translate(entry as Tree, `${path}${key}.${index}.`));
    } else {
      input[key] = translate(value, `${path}${key}.`);
    }
  }
  return input;
}

/**
 * A flattened map (`Attribute.1.Name=…&Attribute.1.Value=…`) as its JSON object. One entry may
 * come without an index (`Attribute.Name=…&Attribute.Value=…`), as SQS's older API versions took
 * it and boto 2's set_queue_attribute still sends it: dropped, a SetQueueAttributes answered
 * success having set nothing. An entry without its name or its value is refused, naming it.
 */
function mapEntries(
  key: string,
  tree: Tree,
  [, keyField, valueField]: readonly [string, string, string],
): Record<string, unknown> {
  const entries = indexed(tree).map(([index, entry]) => [`${key}.${index}`, entry] as const);
  const unindexed = Object.hasOwn(tree, keyField) || Object.hasOwn(tree, valueField);
  return Object.fromEntries(
    [...(unindexed ? [[key, tree] as const] : []), ...entries].map(([prefix, entry]) => {
      const field = (name: string) =>
        typeof entry !== 'string' && Object.hasOwn(entry, name) ? entry[name] : undefined;
      const name = field(keyField);
      const item = field(valueField);
      if (typeof name !== 'string') throw missingParameter(`${prefix}.${keyField}`);
      if (item === undefined) throw missingParameter(`${prefix}.${valueField}`);
      return [name, typeof item === 'string' ? item : translate(item, `${prefix}.${valueField}.`)];
    }),
  );
}

/** The members of `x.1`, `x.2`, … with their indexes, in index order. */
function indexed(tree: Tree): [string, Tree | string][] {
  return Object.entries(tree)
    .filter(([index]) => /^\d+$/.test(index))
    .sort(([a], [b]) => Number(a) - Number(b));
}

/** The members of `x.1`, `x.2`, … in index order. */
function numbered(tree: Tree): (Tree | string)[] {
  return indexed(tree).map(([, value]) => value);
}

export type { SqsInput };
