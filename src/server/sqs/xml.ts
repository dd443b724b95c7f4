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

function escapeXml(text: string): string {
  return text.replace(/[<>&"'\r]/g, (c) => `&#${c.charCodeAt(0)};`);
}
