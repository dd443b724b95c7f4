import { describe, expect, it } from 'vitest';
import { prettyJson, visibleJson } from '../../src/server/ui/web/format.js';

/** A job's payload as its page shows it (job-page.tsx): pretty JSON, cut, unseen escaped. */
const shown = (value: unknown, maxChars = 20_000) => prettyJson(value, maxChars, visibleJson);

describe('a payload as the job page shows it', () => {
  it('escapes what would show as nothing or as a plain space, keeping the same JSON', () => {
    const payload = {
      user: 'admin\u200B',
      bom: '\uFEFFid',
      lines: 'a\u2028b\u2029c',
      nbsp: 'x\u00A0y',
      controls: 'del\u007F c1\u0085',
      bidi: 'rtl-\u202Eevil',
      selector: 'e\u{E0100}',
      'key\u200D': ['plain text', 'tab\tand\nline'],
    };
    const { text, cut } = shown(payload);
    expect(cut).toBe(false);
    expect(text).toContain('"admin\\u200B"');
    expect(text).toContain('"\\uFEFFid"');
    expect(text).toContain('"a\\u2028b\\u2029c"');
    expect(text).toContain('"x\\u00A0y"');
    expect(text).toContain('"del\\u007F c1\\u0085"');
    expect(text).toContain('"rtl-\\u202Eevil"');
    expect(text).toContain('"e\\uDB40\\uDD00"');
    expect(text).toContain('"key\\u200D"');
    expect(text).toContain('"tab\\tand\\nline"');
    // Nothing unseen is left, the indentation's line breaks aside, and it reads as the payload.
    expect(text.replace(/\n/g, '')).toMatch(/^[\x20-\x7E]*$/);
    expect(text.split('\n')).toHaveLength(JSON.stringify(payload, null, 2).split('\n').length);
    expect(JSON.parse(text)).toEqual(payload);
  });

  it('leaves a payload without such characters as JSON writes it', () => {
    const payload = { total: 42, items: ['a', 'é', '\u{1F600}'], nested: { ok: true } };
    expect(shown(payload).text).toBe(JSON.stringify(payload, null, 2));
  });

  it('cuts a long payload without splitting a character in two', () => {
    // The quote, then emoji of two UTF-16 code units each: an even cut falls inside one.
    const { text, cut } = shown('\u{1F600}'.repeat(100), 20);
    expect(cut).toBe(true);
    expect(text).toBe(`"${'\u{1F600}'.repeat(9)}`);
    expect(text).not.toMatch(/[\uD800-\uDBFF]$/);
    expect(shown('\u{1F600}'.repeat(100), 21).text).toBe(`"${'\u{1F600}'.repeat(10)}`);
  });
});
