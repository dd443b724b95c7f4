import { invalidParameter, SqsError } from './errors.js';
import type { MessageAttribute } from './md5.js';
import { isRecord, type SqsInput } from './params.js';

export const MAX_MESSAGE_ATTRIBUTES = 10;
const NAME = /^[A-Za-z0-9_.-]{1,256}$/;
const DATA_TYPE = /^(String|Number|Binary)(\.[^\s].{0,255})?$/s;
// No digit can be matched two ways: a long run of digits is read once, not backtracked over.
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
/** SQS's Number: up to 38 significant digits, its magnitude from 10^-128 to below 10^126. */
const MAX_NUMBER_DIGITS = 38;
const MIN_NUMBER_EXPONENT = -128;
const MAX_NUMBER_EXPONENT = 126;
/** The characters SQS allows in bodies and string values. */
const INVALID_CHARACTER = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/** Refuses text with a character SQS does not allow. */
export function checkCharacters(text: string, what: string): void {
  if (INVALID_CHARACTER.test(text)) {
    throw new SqsError(
      'InvalidMessageContents',
      `Invalid characters found in ${what}. Characters allowed are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.`,
    );
  }
}

/**
 * Refuses a send (`operation`: SendMessage, or SendMessageBatch for any of its entries) whose
 * message attributes hold list values, as SQS does: `StringListValues` and `BinaryListValues`
 * are reserved in its model, refused even empty, and the whole request with them.
 */
export function refuseListValues(input: SqsInput, operation: string): void {
  for (const member of ['MessageAttributes', 'MessageSystemAttributes']) {
    const attributes = input[member];
    if (!isRecord(attributes)) continue;
    if (Object.values(attributes).some((value) => isRecord(value) && hasListValues(value))) {
      throw listValuesRefused(operation);
    }
  }
}

function hasListValues(value: SqsInput): boolean {
  return value.StringListValues !== undefined || value.BinaryListValues !== undefined;
}

function listValuesRefused(operation?: string): SqsError {
  return new SqsError(
    'UnsupportedOperation',
    `Message attribute list values${operation === undefined ? '' : ` in ${operation} operation`} are not supported.`,
  );
}

/**
 * The message attributes of a send, checked as SQS checks them: at most 10; names of letters,
 * digits, `_ - .` (no `AWS.`/`Amazon.` prefix, no `..`, no `.` at either end); a DataType of
 * String, Number or Binary with an optional `.custom` suffix; a value of that type.
 */
export function parseMessageAttributes(
  raw: Record<string, SqsInput>,
  member = 'MessageAttributes',
): Record<string, MessageAttribute> {
  const names = Object.keys(raw);
  if (names.length > MAX_MESSAGE_ATTRIBUTES) {
    throw invalidParameter(
      member,
      `${names.length} attributes`,
      `Number of message attributes [${names.length}] exceeds the allowed maximum [${MAX_MESSAGE_ATTRIBUTES}].`,
    );
  }
  // fromEntries defines each name as a member, `__proto__` included.
  return Object.fromEntries(names.map((name) => [name, parseOne(name, raw[name] as SqsInput)]));
}

function parseOne(name: string, value: SqsInput): MessageAttribute {
  const reserved = /^(aws\.|amazon\.)/i.test(name);
  if (!NAME.test(name) || reserved || name.includes('..') || /^\.|\.$/.test(name)) {
    throw new SqsError(
      'InvalidParameterValue',
      `Message (user) attribute name '${name}' is invalid: use 1 to 256 letters, digits, '-', '_' or '.', with no '..', no '.' at either end and no AWS. or Amazon. prefix.`,
    );
  }
  const dataType = value.DataType;
  if (typeof dataType !== 'string' || !DATA_TYPE.test(dataType)) {
    throw new SqsError(
      'InvalidParameterValue',
      `The message attribute '${name}' has an invalid message attribute type: it must be String, Number or Binary, optionally followed by .label.`,
    );
  }
  if (hasListValues(value)) throw listValuesRefused();
  if (dataType.startsWith('Binary')) {
    const binary = value.BinaryValue;
    if (typeof binary !== 'string' || binary.length === 0) throw emptyValue(name, 'Binary');
    return { DataType: dataType, BinaryValue: decodeBase64(name, binary) };
  }
  const text = value.StringValue;
  const type = dataType.startsWith('Number') ? 'Number' : 'String';
  if (typeof text !== 'string' || text.length === 0) throw emptyValue(name, type);
  if (type === 'Number') checkNumber(name, text);
  checkCharacters(text, `message attribute '${name}'`);
  return { DataType: dataType, StringValue: text };
}

/**
 * A Number value as SQS takes it: decimal or scientific notation, at most 38 significant digits
 * (leading and trailing zeros are not counted), zero or a magnitude from 10^-128 to below
 * 10^126. Anything else is refused rather than kept as text that no SQS would send back.
 */
function checkNumber(name: string, text: string): void {
  const refuse = (why: string) =>
    new SqsError(
      'InvalidParameterValue',
      `Value ${text} for message attribute '${name}' is not a valid Number${why}.`,
    );
  if (!NUMBER.test(text)) throw refuse('');
  const [mantissa = '', exponentText = '0'] = text.replace(/^[+-]/, '').split(/[eE]/);
  const [whole = '', fraction = ''] = mantissa.split('.');
  const digits = whole + fraction;
  const first = digits.search(/[1-9]/);
  if (first === -1) return; // zero
  const significant = digits.slice(first).replace(/0+$/, '').length;
  if (significant > MAX_NUMBER_DIGITS) {
    throw refuse(`: it has ${significant} significant digits, more than ${MAX_NUMBER_DIGITS}`);
  }
  // The power of ten of its first significant digit.
  const magnitude = whole.length - 1 - first + Number(exponentText);
  if (!(magnitude >= MIN_NUMBER_EXPONENT && magnitude < MAX_NUMBER_EXPONENT)) {
    throw refuse(
      `: its magnitude must be from 10^${MIN_NUMBER_EXPONENT} to below 10^${MAX_NUMBER_EXPONENT}`,
    );
  }
}

/**
 * The bytes of canonical base64 (standard alphabet, `=` padding to a multiple of 4): what
 * encodes back to the same text. Buffer.from skips what it cannot read, so `AAAAA` would lose
 * a character and `==` every byte, silently.
 */
function decodeBase64(name: string, text: string): Buffer {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length === 0 || bytes.toString('base64') !== text) {
    throw new SqsError(
      'InvalidParameterValue',
      `The BinaryValue of message attribute '${name}' is not valid base64: use the standard alphabet (A-Z, a-z, 0-9, + and /), padded with = to a multiple of 4 characters.`,
    );
  }
  return bytes;
}

function emptyValue(name: string, type: string): SqsError {
  return new SqsError(
    'InvalidParameterValue',
    `Message (user) attribute '${name}' must contain a non-empty value of type '${type}'.`,
  );
}

/** Bytes SQS counts toward MaximumMessageSize: the body, and each name, type and value. */
export function messageSize(body: string, attributes: Record<string, MessageAttribute>): number {
  let bytes = Buffer.byteLength(body, 'utf8');
  for (const [name, attribute] of Object.entries(attributes)) {
    bytes += Buffer.byteLength(name, 'utf8') + Buffer.byteLength(attribute.DataType, 'utf8');
    bytes +=
      attribute.BinaryValue?.length ?? Buffer.byteLength(attribute.StringValue ?? '', 'utf8');
  }
  return bytes;
}

/** Message attributes as the JSON protocol answers them (binary as base64). */
export function attributesToWire(
  attributes: Record<string, MessageAttribute>,
): Record<string, { DataType: string; StringValue?: string; BinaryValue?: string }> {
  return Object.fromEntries(
    Object.entries(attributes).map(([name, attribute]) => [
      name,
      attribute.BinaryValue === undefined
        ? { DataType: attribute.DataType, StringValue: attribute.StringValue ?? '' }
        : { DataType: attribute.DataType, BinaryValue: attribute.BinaryValue.toString('base64') },
    ]),
  );
}

/** Stored attributes back to values (the envelope keeps binary as base64). */
export function attributesFromStore(stored: unknown): Record<string, MessageAttribute> {
  if (!isRecord(stored)) return {};
  return Object.fromEntries(
    Object.entries(stored).flatMap(([name, value]): [string, MessageAttribute][] => {
      if (!isRecord(value) || typeof value.DataType !== 'string') return [];
      return [
        [
          name,
          typeof value.BinaryValue === 'string'
            ? { DataType: value.DataType, BinaryValue: Buffer.from(value.BinaryValue, 'base64') }
            : { DataType: value.DataType, StringValue: String(value.StringValue ?? '') },
        ],
      ];
    }),
  );
}
