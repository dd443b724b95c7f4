import { createHash } from 'node:crypto';

/** One message attribute as SQS carries it; binary values as bytes. */
export interface MessageAttribute {
  DataType: string;
  StringValue?: string;
  BinaryValue?: Buffer;
}

/** MD5 hex of the UTF-8 body (MD5OfMessageBody, MD5OfBody). */
export function md5OfBody(body: string): string {
  return createHash('md5').update(body, 'utf8').digest('hex');
}

/**
 * MD5OfMessageAttributes as SQS computes it: names in code-unit order; for each, the name, the
 * data type and the value, each as a 4-byte big-endian length then the bytes, with one
 * transport byte (1 string, 2 binary) before the value. Undefined when there are none.
 */
export function md5OfMessageAttributes(
  attributes: Readonly<Record<string, MessageAttribute>>,
): string | undefined {
  const names = Object.keys(attributes).sort(compareCodeUnits);
  if (names.length === 0) return undefined;
  const hash = createHash('md5');
  for (const name of names) {
    const attribute = attributes[name] as MessageAttribute;
    hash.update(lengthPrefixed(Buffer.from(name, 'utf8')));
    hash.update(lengthPrefixed(Buffer.from(attribute.DataType, 'utf8')));
    if (attribute.BinaryValue !== undefined) {
      hash.update(Buffer.from([2]));
      hash.update(lengthPrefixed(attribute.BinaryValue));
    } else {
      hash.update(Buffer.from([1]));
      hash.update(lengthPrefixed(Buffer.from(attribute.StringValue ?? '', 'utf8')));
    }
  }
  return hash.digest('hex');
}

function lengthPrefixed(bytes: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length, 0);
  return Buffer.concat([length, bytes]);
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
