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

/**
 * A payload's JSON text (`JSON.stringify`) as the page shows it. JSON escapes C0 controls and
 * lone surrogates; every other character that shows as nothing or as a plain space (`UNSEEN`:
 * zero-width and other format characters, bidi controls, DEL and C1 controls, line and
 * paragraph separators, spaces other than U+0020) is escaped the same way, `\u200B`, so that
 * "admin\u200B" does not read "admin" nor U+2028 as a line break. It can only stand inside a
 * string, so the text is still the JSON of the same value; its own line breaks stay.
 */
export const visibleJson = (text: string): string =>
  text.replace(UNSEEN_ALL, (char) => (char === '\n' ? char : jsonEscape(char)));

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
