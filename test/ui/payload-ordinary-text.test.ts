import { describe, expect, it } from 'vitest';
import { prettyJson, visibleJson } from '../../src/server/ui/web/format.js';

/** A job's payload as its page shows it (job-page.tsx): pretty JSON, cut, unseen escaped. */
const shown = (value: unknown) => prettyJson(value, 20_000, visibleJson).text;

// Zero-width joiners and variation selectors are also how ordinary text is drawn: an emoji of
// several (a heart, a family, a keycap, a flag of tags), a Persian word, a Devanagari conjunct,
// a Japanese name spelled with its variant of a kanji. There they show, and stay as written.
const ORDINARY = {
  heart: '\u2764\uFE0F',
  coder: '\u{1F469}\u{1F3FD}\u200D\u{1F4BB}',
  family: '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}',
  rainbowFlag: '\u{1F3F3}\uFE0F\u200D\u{1F308}',
  keycap: '1\uFE0F\u20E3',
  england: '\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}',
  persian: '\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645',
  devanagari: '\u0915\u094D\u200D\u0937',
  kanjiVariant: '\u845B\u{E0100}\u57CE',
  mongolian: '\u1820\u180B\u1821',
};

describe('a payload of ordinary text as the job page shows it', () => {
  it('leaves the joiners and selectors that emoji and scripts draw as JSON writes them', () => {
    for (const [name, text] of Object.entries(ORDINARY)) {
      expect([name, shown(text)]).toEqual([name, JSON.stringify(text)]);
    }
    expect(shown(ORDINARY)).toBe(JSON.stringify(ORDINARY, null, 2));
  });

  it('still escapes them where they draw nothing: after ASCII, alone, or out of their sequence', () => {
    const cases: [string, string][] = [
      ['admin\u200D', '"admin\\u200D"'],
      ['admin\uFE0F', '"admin\\uFE0F"'],
      ['1\uFE0F', '"1\\uFE0F"'],
      ['\u200D\u{1F469}', '"\\u200D\u{1F469}"'],
      ['\u{1F469}\u200D', '"\u{1F469}\\u200D"'],
      ['a\u200Cb', '"a\\u200Cb"'],
      ['e\u{E0100}', '"e\\uDB40\\uDD00"'],
      ['x\u{E0067}\u{E007F}', '"x\\uDB40\\uDC67\\uDB40\\uDC7F"'],
      ['\u{1F3F4}\u{E0067}', '"\u{1F3F4}\\uDB40\\uDC67"'],
      ['\u06CC\u200C\u200C\u062E', '"\u06CC\\u200C\\u200C\u062E"'],
      ['\u0645\u200F\u0631', '"\u0645\\u200F\u0631"'],
      ['\u0645\u061C\u200C\u062E', '"\u0645\\u061C\\u200C\u062E"'],
    ];
    for (const [text, expected] of cases) expect([text, shown(text)]).toEqual([text, expected]);
    for (const [text] of cases) expect(JSON.parse(shown(text))).toBe(text);
  });
});
