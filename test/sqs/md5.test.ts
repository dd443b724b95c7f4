import { describe, expect, it } from 'vitest';
import { md5OfBody, md5OfMessageAttributes } from '../../src/server/sqs/md5.js';

/** Published vectors (the attribute names are part of each digest). */
const STRING = { DataType: 'String', StringValue: 'attribValue 1' };
const NUMBER = { DataType: 'Number.float', StringValue: '4563442423554324324264524243.32543234' };
const BINARY = { DataType: 'Binary', BinaryValue: Buffer.from('Hello binary world!') };

describe('MD5 digests', () => {
  it('of a body: MD5 hex of its UTF-8 bytes', () => {
    expect(md5OfBody('hello')).toBe('5d41402abc4b2a76b9719d911017c592');
    expect(md5OfBody('é')).toBe('66ddcd97cfdeabb2f6fb8a999b4bc76f');
  });

  it('of message attributes: the SQS vectors', () => {
    expect(md5OfMessageAttributes({ attribName1: STRING })).toBe(
      '19e27d4e946b072f3f58da80d94fd778',
    );
    expect(md5OfMessageAttributes({ customNumberTypeAttrib: NUMBER })).toBe(
      '9fe1b90bbd9965bdf77bac517c7d2495',
    );
    expect(md5OfMessageAttributes({ binaryAttribute: BINARY })).toBe(
      '31a92b15d92f8db860eda32aceb656c3',
    );
    // Given in any order, names are sorted first.
    expect(
      md5OfMessageAttributes({
        binaryAttribute: BINARY,
        attribName1: STRING,
        customNumberTypeAttrib: NUMBER,
      }),
    ).toBe('c932db14a896c663f83c260297d594ff');
  });

  it('of no attributes: none', () => {
    expect(md5OfMessageAttributes({})).toBeUndefined();
  });
});
