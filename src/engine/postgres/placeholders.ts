/**
 * A statement's `?` placeholders, found as PostgreSQL's lexer would: a `?` inside a string
 * ('…' with '' escapes, E'…' with backslash escapes, U&'…', $tag$…$tag$), a quoted identifier
 * ("…") or a comment (--, nested /* *\/) is text, never a placeholder.
 */
export interface ScannedStatement {
  /** The text around the placeholders: one part more than there are placeholders. */
  readonly parts: readonly string[];
  /**
   * A plain '…' string holds a backslash: whether it escapes the next character depends on the
   * session's standard_conforming_strings, so where such a string ends is not certain.
   */
  readonly backslashInPlainString: boolean;
  /** Another statement follows a `;` (a prepared statement holds one). */
  readonly multiStatement: boolean;
  /** The text with its placeholders numbered `$1, $2, …`. */
  readonly numbered: string;
}

const QUOTE = 39; // '
const DOUBLE_QUOTE = 34; // "
const BACKSLASH = 92;
const DOLLAR = 36;
const QUESTION = 63;
const SEMICOLON = 59;
const DASH = 45;
const SLASH = 47;
const STAR = 42;
const AMPERSAND = 38;
const NEWLINE = 10;
const RETURN = 13;

export function scanPlaceholders(sql: string): ScannedStatement {
  const parts: string[] = [];
  let partStart = 0;
  let backslashInPlainString = false;
  let afterSemicolon = false;
  let multiStatement = false;
  let i = 0;
  while (i < sql.length) {
    const c = sql.charCodeAt(i);
    if (isSpace(c)) {
      i += 1;
      continue;
    }
    if (c === DASH && sql.charCodeAt(i + 1) === DASH) {
      i = endOfLineComment(sql, i);
      continue;
    }
    if (c === SLASH && sql.charCodeAt(i + 1) === STAR) {
      i = endOfBlockComment(sql, i);
      continue;
    }
    if (c === SEMICOLON) {
      afterSemicolon = true;
      i += 1;
      continue;
    }
    if (afterSemicolon) multiStatement = true;
    if (c === QUESTION) {
      parts.push(sql.slice(partStart, i));
      partStart = i + 1;
      i += 1;
    } else if (c === QUOTE) {
      const end = endOfString(sql, i, 'plain');
      if (sql.slice(i, end).includes('\\')) backslashInPlainString = true;
      i = end;
    } else if (c === DOUBLE_QUOTE) {
      i = endOfQuotedIdentifier(sql, i);
    } else if (c === DOLLAR) {
      i = endOfDollar(sql, i);
    } else if (isIdentifierStart(c)) {
      i = endOfIdentifierOrPrefixedString(sql, i);
    } else {
      i += 1;
    }
  }
  parts.push(sql.slice(partStart));
  let numbered = parts[0] ?? '';
  for (let index = 1; index < parts.length; index++) numbered += `$${index}${parts[index]}`;
  return { parts, backslashInPlainString, multiStatement, numbered };
}

/** An identifier, or the E / U& before a string, which changes how the string escapes. */
function endOfIdentifierOrPrefixedString(sql: string, start: number): number {
  let i = start + 1;
  // `$` continues an identifier (a$b), so a `$` met by the main loop starts a token.
  while (i < sql.length && isIdentifierPart(sql.charCodeAt(i))) i += 1;
  if (i !== start + 1) return i;
  const letter = sql[start];
  if ((letter === 'E' || letter === 'e') && sql.charCodeAt(i) === QUOTE) {
    return endOfString(sql, i, 'escape');
  }
  // U&'…' escapes with a backslash of its own, never the quote: '' as in a plain string.
  if (
    (letter === 'U' || letter === 'u') &&
    sql.charCodeAt(i) === AMPERSAND &&
    sql.charCodeAt(i + 1) === QUOTE
  ) {
    return endOfString(sql, i + 1, 'unicode');
  }
  return i;
}

/**
 * The end of a string starting at the quote `start`, with its continuations: PostgreSQL joins
 * '…' followed by whitespace holding a newline and another '…' into one string of the same kind.
 */
function endOfString(sql: string, start: number, kind: 'plain' | 'escape' | 'unicode'): number {
  let i = start + 1;
  while (i < sql.length) {
    const c = sql.charCodeAt(i);
    if (c === BACKSLASH && kind === 'escape') {
      i += 2;
    } else if (c === QUOTE) {
      if (sql.charCodeAt(i + 1) === QUOTE) {
        i += 2;
        continue;
      }
      const next = continuation(sql, i + 1);
      if (next === undefined) return i + 1;
      i = next + 1;
    } else {
      i += 1;
    }
  }
  return sql.length;
}

/** Where the quote continuing a string stands, if one does (whitespace with a newline between). */
function continuation(sql: string, from: number): number | undefined {
  let i = from;
  let newline = false;
  while (i < sql.length) {
    const c = sql.charCodeAt(i);
    if (c === NEWLINE || c === RETURN) {
      newline = true;
      i += 1;
    } else if (isSpace(c)) {
      i += 1;
    } else if (c === DASH && sql.charCodeAt(i + 1) === DASH) {
      // A -- comment may stand between the parts too (it ends at a newline).
      i = endOfLineComment(sql, i);
    } else {
      return newline && c === QUOTE ? i : undefined;
    }
  }
  return undefined;
}

function endOfQuotedIdentifier(sql: string, start: number): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql.charCodeAt(i) === DOUBLE_QUOTE) {
      if (sql.charCodeAt(i + 1) !== DOUBLE_QUOTE) return i + 1;
      i += 2;
    } else {
      i += 1;
    }
  }
  return sql.length;
}

function endOfLineComment(sql: string, start: number): number {
  let i = start + 2;
  while (i < sql.length && sql.charCodeAt(i) !== NEWLINE && sql.charCodeAt(i) !== RETURN) i += 1;
  return i;
}

/** Block comments nest in PostgreSQL: /* a /* b *\/ still a *\/. */
function endOfBlockComment(sql: string, start: number): number {
  let depth = 1;
  let i = start + 2;
  while (i < sql.length && depth > 0) {
    const c = sql.charCodeAt(i);
    if (c === SLASH && sql.charCodeAt(i + 1) === STAR) {
      depth += 1;
      i += 2;
    } else if (c === STAR && sql.charCodeAt(i + 1) === SLASH) {
      depth -= 1;
      i += 2;
    } else {
      i += 1;
    }
  }
  return i;
}

/** A dollar-quoted string ($$…$$, $tag$…$tag$), a `$1` parameter, or a lone `$`. */
function endOfDollar(sql: string, start: number): number {
  let i = start + 1;
  if (isDigit(sql.charCodeAt(i))) {
    while (isDigit(sql.charCodeAt(i))) i += 1;
    return i;
  }
  if (isIdentifierStart(sql.charCodeAt(i))) {
    i += 1;
    while (i < sql.length && isTagPart(sql.charCodeAt(i))) i += 1;
  }
  if (sql.charCodeAt(i) !== DOLLAR) return start + 1;
  const delimiter = sql.slice(start, i + 1);
  const close = sql.indexOf(delimiter, i + 1);
  return close === -1 ? sql.length : close + delimiter.length;
}

function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** Letters, `_` and any non-ASCII character, as PostgreSQL's ident_start. */
function isIdentifierStart(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c >= 128;
}

function isTagPart(c: number): boolean {
  return isIdentifierStart(c) || isDigit(c);
}

function isIdentifierPart(c: number): boolean {
  return isTagPart(c) || c === DOLLAR;
}
