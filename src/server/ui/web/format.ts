/** How figures read on the page: short, unit last, the exact value in a title. */

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const rate = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

export const formatCount = (value: number) => integer.format(value);

export function formatRate(perSecond: number | null | undefined): string {
  if (perSecond === null || perSecond === undefined) return '–';
  if (perSecond === 0) return '0';
  return perSecond < 0.1 ? '< 0.1' : rate.format(perSecond);
}

/** A duration in ms as "850 ms", "12 s", "3 min 5 s", "2 h 4 min", "3 d 2 h". */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(abs)} ms`;
  const s = Math.floor(abs / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 === 0 ? `${m} min` : `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 === 0 ? `${h} h` : `${h} h ${m % 60} min`;
  const d = Math.floor(h / 24);
  return h % 24 === 0 ? `${d} d` : `${d} d ${h % 24} h`;
}

/** An option in ms where null means none. */
export const formatBound = (value: number | null, unit: 'ms' | 'count') =>
  value === null ? 'unbounded' : unit === 'ms' ? formatDuration(value) : formatCount(value);

const time = new Intl.DateTimeFormat(undefined, {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});
const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});

/** Today: the time; else the date and time. */
export function formatTime(epochMs: number): string {
  const today = new Date().toDateString() === new Date(epochMs).toDateString();
  return (today ? time : dateTime).format(epochMs);
}

export const isoTime = (epochMs: number) => new Date(epochMs).toISOString();

/** "in 12 s" or "12 s ago". */
export function formatRelative(epochMs: number, nowMs: number): string {
  const delta = epochMs - nowMs;
  return delta >= 0 ? `in ${formatDuration(delta)}` : `${formatDuration(-delta)} ago`;
}

/**
 * Pretty JSON, cut to `maxChars` (the page says when it is cut), its text passed through `shown`.
 * The cut never splits a surrogate pair: the last character shown is one that was there.
 */
export function prettyJson(
  value: unknown,
  maxChars: number,
  shown: (text: string) => string = (text) => text,
): { text: string; cut: boolean } {
  const text = value === undefined ? '(no payload)' : shown(JSON.stringify(value, null, 2));
  if (text.length <= maxChars) return { text, cut: false };
  const end = /[\uD800-\uDBFF]/.test(text.charAt(maxChars - 1)) ? maxChars - 1 : maxChars;
  return { text: text.slice(0, end), cut: true };
}

/**
 * Bidirectional controls (embeddings, overrides, isolates, marks) reorder the text around them:
 * an id "rtl-\u202Eevil" would read "rtl-live". Text from the queue (ids, reasons, group keys)
 * shows them as escapes, \u202E, so that what is read is what is there.
 */
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

export const visible = (text: string): string =>
  text.replace(
    BIDI_CONTROLS,
    (char) => `\\u${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`,
  );

/**
 * Characters that show as nothing, or as a plain space, where they stand: controls (a line
 * break, a tab, NUL, DEL), format characters such as the zero-width space U+200B and the bidi
 * controls, the other default-ignorable ones (variation selectors, fillers), lone surrogates,
 * line and paragraph separators, and every space that is not U+0020 (U+00A0 reads as one).
 */
const UNSEEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]|(?! )\p{Zs}/u;
const UNSEEN_ALL = new RegExp(UNSEEN.source, 'gu');

const escapeChar = (char: string): string => {
  const code = char.codePointAt(0) ?? 0;
  return code > 0xffff
    ? `\\u{${code.toString(16).toUpperCase()}}`
    : `\\u${code.toString(16).toUpperCase().padStart(4, '0')}`;
};

/** `char` as JSON escapes it: `\u200B`, and a character beyond U+FFFF as its surrogate pair. */
const jsonEscape = (char: string): string => {
  let escaped = '';
  for (let at = 0; at < char.length; at += 1) {
    escaped += `\\u${char.charCodeAt(at).toString(16).toUpperCase().padStart(4, '0')}`;
  }
  return escaped;
};

/** An emoji, with its presentation selector or skin tone, just before a joiner. */
const EMOJI_BEFORE = /\p{Extended_Pictographic}(?:[\uFE0E\uFE0F]|\p{Emoji_Modifier})?$/u;
const EMOJI = /^\p{Extended_Pictographic}$/u;
const KEYCAP_BASE = /^[0-9#*]$/;
const IDEOGRAPH = /^\p{Ideographic}$/u;
const MONGOLIAN_LETTER = /^(?=\p{L})\p{scx=Mong}$/u;
/** A letter or mark, itself seen, of a script whose letters join or form conjuncts. */
const JOINING = new RegExp(
  String.raw`^(?!${UNSEEN.source})(?=[\p{L}\p{M}])[\p{scx=Arab}\p{scx=Syrc}\p{scx=Nkoo}\p{scx=Mong}\p{scx=Deva}\p{scx=Beng}\p{scx=Guru}\p{scx=Gujr}\p{scx=Orya}\p{scx=Taml}\p{scx=Telu}\p{scx=Knda}\p{scx=Mlym}\p{scx=Sinh}]$`,
  'u',
);
const TAG = /^[\u{E0020}-\u{E007E}]$/u;
/** The most tag characters looked at around one: a flag's spell its region (ISO 3166-2), a few. */
const MOST_TAGS = 32;

/** The code point of `text` that ends at `at` ('' at the start). */
function pointBefore(text: string, at: number): string {
  if (at <= 0) return '';
  const low = text.charCodeAt(at - 1);
  const high = at >= 2 ? text.charCodeAt(at - 2) : 0;
  const pair = low >= 0xdc00 && low <= 0xdfff && high >= 0xd800 && high <= 0xdbff;
  return text.slice(pair ? at - 2 : at - 1, at);
}

/** The code point of `text` that begins at `at` ('' at the end). */
function pointAt(text: string, at: number): string {
  const code = text.codePointAt(at);
  return code === undefined ? '' : String.fromCodePoint(code);
}

/** Whether the tag character at `at` is one of a flag of tags: U+1F3F4, tags, U+E007F. */
function inTagFlag(text: string, at: number): boolean {
  let start = at;
  for (let count = 0; count < MOST_TAGS && TAG.test(pointBefore(text, start)); count += 1) {
    start -= 2;
  }
  if (pointBefore(text, start) !== '\u{1F3F4}') return false;
  let end = at;
  for (let count = 0; count <= MOST_TAGS; count += 1) {
    const point = pointAt(text, end);
    if (point === '\u{E007F}') return end > start;
    if (!TAG.test(point)) return false;
    end += 2;
  }
  return false;
}

/**
 * Whether `char`, a character of `UNSEEN` at `at` of `text`, is part of how ordinary text is
 * drawn there, not nothing: the joiners and selectors of an emoji ("\u2764\uFE0F",
 * "\u{1F469}\u200D\u{1F4BB}", a keycap "1\uFE0F\u20E3", a flag of tags), a variation
 * selector after a CJK ideograph or a Mongolian letter, and a zero-width joiner or non-joiner
 * between two letters (or marks) of a script whose letters join or form conjuncts (Persian
 * "\u0645\u06CC\u200C\u062E", Devanagari "\u0915\u094D\u200D\u0937"). After an ASCII
 * letter, or alone, none is.
 */
function drawn(char: string, at: number, text: string): boolean {
  const code = char.codePointAt(0) ?? 0;
  const before = pointBefore(text, at);
  const after = pointAt(text, at + char.length);
  if (code === 0xfe0e || code === 0xfe0f) {
    return EMOJI.test(before) || (KEYCAP_BASE.test(before) && after === '\u20E3');
  }
  if (code === 0x200c || code === 0x200d) {
    if (JOINING.test(before) && JOINING.test(after)) return true;
    return (
      code === 0x200d && EMOJI.test(after) && EMOJI_BEFORE.test(text.slice(Math.max(0, at - 4), at))
    );
  }
  if ((code >= 0xfe00 && code <= 0xfe02) || (code >= 0xe0100 && code <= 0xe01ef)) {
    return IDEOGRAPH.test(before);
  }
  if ((code >= 0x180b && code <= 0x180d) || code === 0x180f) return MONGOLIAN_LETTER.test(before);
  if (code >= 0xe0020 && code <= 0xe007f) return inTagFlag(text, at);
  return false;
}

/**
 * A payload's JSON text (`JSON.stringify`) as the page shows it. JSON escapes C0 controls and
 * lone surrogates; every other character that shows as nothing or as a plain space (`UNSEEN`:
 * zero-width and other format characters, bidi controls, DEL and C1 controls, line and
 * paragraph separators, spaces other than U+0020) is escaped the same way, `\u200B`, so that
 * "admin\u200B" does not read "admin" nor U+2028 as a line break, unless ordinary text draws
 * it there (`drawn`: an emoji's joiners, a Persian non-joiner). It can only stand inside a
 * string, so the text is still the JSON of the same value; its own line breaks stay.
 */
export const visibleJson = (text: string): string =>
  text.replace(UNSEEN_ALL, (char: string, at: number) =>
    char === '\n' || drawn(char, at, text) ? char : jsonEscape(char),
  );

/**
 * A job id (or a group key) as the page shows it as text. Ids are any text a producer stored:
 * "job-1\n" and "job-1", "zw\u200Bx" and "zwx", "  spaced  " and "spaced" would look the same,
 * and " " would be an empty link. An id with a character that shows as nothing or as a plain
 * space (`UNSEEN`, bidi controls aside), with whitespace at its start or end, empty, or
 * beginning with `"` is shown quoted, as a JSON string: `"job-1\n"`, `"zw\u200Bx"`,
 * `"  spaced  "`, `" "`, `"\"quoted\""`. So a shown id that begins with `"` is always the quoted
 * form, and any other is the id as it is, its bidi controls escaped (`visible`).
 * Where the id is shown, its spaces are kept (CSS `white-space: pre` or `pre-wrap`): two spaces
 * are not drawn as one. Links and API calls use the id itself, never this.
 */
export function visibleId(id: string): string {
  const bare = id.replace(BIDI_CONTROLS, '');
  const plain = id !== '' && !id.startsWith('"') && !/^\s|\s$/u.test(id) && !UNSEEN.test(bare);
  if (plain) return visible(id);
  // JSON escapes the quote, the backslash, C0 controls and lone surrogates; the rest of what
  // is unseen (DEL, C1 controls, format characters, odd spaces) is escaped the same way.
  return JSON.stringify(id).replace(UNSEEN_ALL, escapeChar);
}
