import { checkJsonBody } from '../limits.js';
import { SqsError } from './errors.js';
import { isRecord } from './params.js';
import type { SqsProtocol } from './protocol.js';

export const JSON_CONTENT_TYPE = 'application/x-amz-json-1.0';
const TARGET_PREFIX = 'AmazonSQS.';

/**
 * The members SQS's model types as integers, by action: of the request itself, and of each of
 * its batch entries. AWS JSON 1.0 sends them as JSON numbers, and SQS refuses one sent as a
 * string (`"MaxNumberOfMessages": "10"`) before doing anything; in the query protocol they are
 * text, which `optionalInteger` reads.
 */
const INTEGER_MEMBERS: Readonly<Record<string, { request?: string[]; entries?: string[] }>> = {
  ReceiveMessage: { request: ['MaxNumberOfMessages', 'VisibilityTimeout', 'WaitTimeSeconds'] },
  ChangeMessageVisibility: { request: ['VisibilityTimeout'] },
  ChangeMessageVisibilityBatch: { entries: ['VisibilityTimeout'] },
  SendMessage: { request: ['DelaySeconds'] },
  SendMessageBatch: { entries: ['DelaySeconds'] },
  ListQueues: { request: ['MaxResults'] },
  ListDeadLetterSourceQueues: { request: ['MaxResults'] },
  ListMessageMoveTasks: { request: ['MaxResults'] },
  StartMessageMoveTask: { request: ['MaxNumberOfMessagesPerSecond'] },
};

/** The action an `X-Amz-Target: AmazonSQS.<Action>` header names, if it names one. */
export function targetAction(header: string | string[] | undefined): string | undefined {
  const target = Array.isArray(header) ? header[0] : header;
  return target?.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : undefined;
}

/** AWS JSON 1.0, what current SDKs send: the action in X-Amz-Target, members as JSON. */
export function jsonProtocol(maxJsonDepth: number): SqsProtocol {
  return {
    parse(request, body) {
      const action = targetAction(request.headers['x-amz-target']);
      if (action === undefined || action === '') {
        throw new SqsError(
          'InvalidAction',
          'X-Amz-Target must name an action: AmazonSQS.<Action>.',
        );
      }
      let input: unknown;
      try {
        input = body.trim() === '' ? {} : JSON.parse(body);
      } catch {
        throw new SqsError('SerializationException', 'The request body is not valid JSON.');
      }
      if (!isRecord(input)) {
        throw new SqsError('SerializationException', 'The request body must be a JSON object.');
      }
      try {
        // SQS answers such names itself (an attribute named __proto__ is an unknown attribute,
        // a message attribute may be called so), reading them as data, never merging them.
        checkJsonBody(input, maxJsonDepth, 'keep');
      } catch (cause) {
        throw new SqsError('SerializationException', (cause as Error).message, { cause });
      }
      checkIntegers(action, input);
      return { action, input };
    },
    success(reply, _action, output, requestId) {
      return reply
        .status(200)
        .header('content-type', JSON_CONTENT_TYPE)
        .header('x-amzn-requestid', requestId)
        .send(JSON.stringify(output));
    },
    failure(reply, error, requestId) {
      return reply
        .status(error.status)
        .header('content-type', JSON_CONTENT_TYPE)
        .header('x-amzn-requestid', requestId)
        .header('x-amzn-query-error', `${error.legacyCode};${error.fault}`)
        .send(
          JSON.stringify({ __type: `com.amazonaws.sqs#${error.code}`, message: error.message }),
        );
    },
  };
}

/**
 * Refuses the whole request, as SQS does, when an integer member of the action is a JSON
 * string: nothing of it is done, not even the batch entries that are right.
 */
function checkIntegers(action: string, input: Record<string, unknown>): void {
  const members = Object.hasOwn(INTEGER_MEMBERS, action) ? INTEGER_MEMBERS[action] : undefined;
  if (members === undefined) return;
  const entries = Array.isArray(input.Entries) ? input.Entries.filter(isRecord) : [];
  const checks: [Record<string, unknown>, string[]][] = [
    [input, members.request ?? []],
    ...entries.map((entry): [Record<string, unknown>, string[]] => [entry, members.entries ?? []]),
  ];
  for (const [object, names] of checks) {
    for (const name of names) {
      if (Object.hasOwn(object, name) && typeof object[name] === 'string') {
        throw new SqsError(
          'SerializationException',
          `STRING_VALUE can not be converted to an Integer: ${name} is a JSON number in this protocol.`,
        );
      }
    }
  }
}
