/** List members of answers and the element each item becomes in the query protocol's XML. */
const LIST_ITEMS: Readonly<Record<string, string>> = {
  QueueUrls: 'QueueUrl',
  queueUrls: 'QueueUrl',
  Messages: 'Message',
  Failed: 'BatchResultErrorEntry',
  Results: 'ListMessageMoveTasksResultEntry',
};

/** Map members: element name, key element, value element. */
const MAP_ITEMS: Readonly<Record<string, [string, string, string]>> = {
  Attributes: ['Attribute', 'Name', 'Value'],
  Tags: ['Tag', 'Key', 'Value'],
  MessageAttributes: ['MessageAttribute', 'Name', 'Value'],
};

/**
 * A JSON-protocol answer as query-protocol XML: lists and maps flattened as SQS writes them
 * (`<Message>…</Message><Message>…`, `<Attribute><Name/><Value/></Attribute>`).
 */
export function toXml(element: string, value: unknown, action = ''): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'object') return `<${element}>${escapeXml(String(value))}</${element}>`;
  const inner = Object.entries(value as Record<string, unknown>)
    .map(([key, member]) => memberXml(key, member, action))
    .join('');
  return `<${element}>${inner}</${element}>`;
}

function memberXml(key: string, member: unknown, action: string): string {
  const map = MAP_ITEMS[key];
  if (map !== undefined && typeof member === 'object' && member !== null) {
    const [item, keyName, valueName] = map;
    return Object.entries(member as Record<string, unknown>)
      .map(
        ([name, value]) => `<${item}>${toXml(keyName, name)}${toXml(valueName, value)}</${item}>`,
      )
      .join('');
  }
  if (Array.isArray(member)) {
    const item = key === 'Successful' ? `${action}ResultEntry` : (LIST_ITEMS[key] ?? key);
    return member.map((entry) => toXml(item, entry, action)).join('');
  }
  return toXml(key, member, action);
}

/** What XML 1.0 cannot carry at all, not even as a character reference. */
const NOT_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;
/** What an answer's text cannot hold as it is: markup, a carriage return, and the above. */
const ESCAPED = new RegExp(`[<>&"'\\r]|${NOT_XML.source}`, 'gu');

/**
 * Text as XML character data. A character XML 1.0 cannot carry (a control character other than
 * tab, line feed and carriage return, U+FFFE, U+FFFF, a lone surrogate) would make the whole
 * answer unreadable to a strict parser (Java's, Python's, .NET's), so the SDK would see no
 * answer, nor the error it holds: it is written as the text `\u0001`, as a body holding one is
 * (see `carriedBody`). It can come from what a request named (an error message quoting a
 * parameter) or stored (a tag, a policy, set through the JSON protocol, which carries it).
 */
function escapeXml(text: string): string {
  return text.replace(ESCAPED, (c) =>
    NOT_XML.test(c)
      ? `\\u${(c.codePointAt(0) as number).toString(16).padStart(4, '0')}`
      : `&#${c.charCodeAt(0)};`,
  );
}
