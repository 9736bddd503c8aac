/**
 * XML append bodies (`application/vnd.eventstore.events+xml`): EventStoreDB converts the XML
 * to JSON with Json.NET and then reads it like an events+json array. This module does the
 * same for the shapes that matter: `<Events><Event><EventId/><EventType/><Data>...</Data>
 * <Metadata>...</Metadata></Event>...</Events>`. Elements with only text become strings,
 * elements with children become objects, repeated names become arrays; attributes become
 * `@name` keys. Anything it cannot read is reported as undefined (a 400 for the caller).
 */

const ENTITIES: Readonly<Record<string, string>> = {
  lt: '<',
  gt: '>',
  amp: '&',
  quot: '"',
  apos: "'",
};

const DEPTH_MAX = 128;

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, entity: string) => {
    if (entity.startsWith('#x') || entity.startsWith('#X')) {
      return String.fromCodePoint(Number.parseInt(entity.slice(2), 16));
    }
    if (entity.startsWith('#')) return String.fromCodePoint(Number.parseInt(entity.slice(1), 10));
    return ENTITIES[entity] ?? whole;
  });
}

interface XmlElement {
  readonly name: string;
  readonly attributes: [string, string][];
  readonly children: XmlElement[];
  text: string;
}

const TOKEN = new RegExp(
  [
    String.raw`<!--[\s\S]*?-->`,
    String.raw`<\?[\s\S]*?\?>`,
    String.raw`<!\[CDATA\[([\s\S]*?)\]\]>`,
    String.raw`<(\/?)([A-Za-z_][\w.:-]*)((?:\s+[\w.:-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>`,
    String.raw`([^<]+)`,
  ].join('|'),
  'gy',
);
const ATTRIBUTE = /([\w.:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

/** A small, strict XML reader: elements, attributes, text and CDATA; no DTDs. */
export function parseXml(text: string): XmlElement | undefined {
  const root: XmlElement = { name: '#document', attributes: [], children: [], text: '' };
  const stack: XmlElement[] = [root];
  TOKEN.lastIndex = 0;
  let match: RegExpExecArray | null;
  while (TOKEN.lastIndex < text.length && (match = TOKEN.exec(text)) !== null) {
    const [, cdata, closing, name, attributes, selfClosing, chars] = match;
    const current = stack[stack.length - 1];
    if (current === undefined) return undefined;
    if (cdata !== undefined || chars !== undefined) {
      current.text += cdata ?? decodeEntities(chars ?? '');
    } else if (name !== undefined && closing === '/') {
      if (current.name !== name) return undefined;
      stack.pop();
    } else if (name !== undefined) {
      const element: XmlElement = { name, attributes: [], children: [], text: '' };
      for (const attribute of (attributes ?? '').matchAll(ATTRIBUTE)) {
        element.attributes.push([
          attribute[1] ?? '',
          decodeEntities(attribute[2] ?? attribute[3] ?? ''),
        ]);
      }
      current.children.push(element);
      if (selfClosing !== '/') stack.push(element);
      if (stack.length > DEPTH_MAX) return undefined;
    }
  }
  if (TOKEN.lastIndex !== text.length && text.slice(TOKEN.lastIndex).trim() !== '')
    return undefined;
  if (stack.length !== 1 || root.children.length !== 1) return undefined;
  return root.children[0];
}

/** Json.NET-style conversion of an element's content to a JSON value. */
export function xmlToJson(element: XmlElement): unknown {
  if (element.children.length === 0 && element.attributes.length === 0) {
    return element.text.trim() === '' ? null : element.text.trim();
  }
  const value: Record<string, unknown> = {};
  for (const [name, attributeValue] of element.attributes) value[`@${name}`] = attributeValue;
  for (const child of element.children) {
    const converted = xmlToJson(child);
    const existing = value[child.name];
    if (existing === undefined) value[child.name] = converted;
    else if (Array.isArray(existing)) existing.push(converted);
    else value[child.name] = [existing, converted];
  }
  if (element.text.trim() !== '') value['#text'] = element.text.trim();
  return value;
}

/**
 * `<Events><Event>...</Event></Events>` as the JSON array an events+json body would carry;
 * undefined when the XML cannot be read or has another shape.
 */
export function xmlEventsToJson(text: string): unknown[] | undefined {
  const root = parseXml(text);
  if (root === undefined) return undefined;
  const events = root.children.filter((child) => child.name.toLowerCase() === 'event');
  if (events.length === 0 || events.length !== root.children.length) return undefined;
  return events.map((event) => {
    const fields: Record<string, unknown> = {};
    for (const child of event.children) fields[child.name] = xmlToJson(child);
    return fields;
  });
}
