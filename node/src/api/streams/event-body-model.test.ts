/**
 * The fast paths of append-body parsing (string skipping in the depth scan, the canonical-GUID
 * shortcut, field matching without a Map) against straightforward reference models: the same
 * events for every accepted body and the same 400 message for every rejected one, over
 * generated bodies that mix the awkward cases (case variants and repeated spellings of field
 * names, GUID forms, escapes and brackets inside strings, nesting around the depth limit).
 */
import { describe, expect, it } from 'vitest';
import type { NewEvent } from '../../storage/event-db-types.js';
import { EventDbError } from '../../errors.js';
import { BODY_INVALID, parseEventBody } from './event-body.js';
import { isJsonTooDeep, JSON_DEPTH_MAX } from './json-depth.js';
import { MediaType } from './media-types.js';
import { parseGuid } from './request-headers.js';

// ------------------------------------------------------------------ reference models

function modelTooDeep(text: string, depthMax: number): boolean {
  let depth = 0;
  let inString = false;
  for (let charIndex = 0; charIndex < text.length; charIndex++) {
    const code = text.charCodeAt(charIndex);
    if (inString) {
      if (code === 0x5c) charIndex++;
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) {
      inString = true;
    } else if (code === 0x5b || code === 0x7b) {
      depth++;
      if (depth > depthMax) return true;
    } else if (code === 0x5d || code === 0x7d) {
      depth--;
    }
  }
  return false;
}

const MODEL_GUID =
  /^\{?([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})\}?$/i;

function modelGuid(text: string): string | undefined {
  const match = MODEL_GUID.exec(text.trim());
  if (match === null) return undefined;
  const guid = match.slice(1, 6).join('-').toLowerCase();
  return guid === '00000000-0000-0000-0000-000000000000' ? undefined : guid;
}

function modelParseJson(text: string, depthMax: number): { value: unknown } | undefined {
  if (modelTooDeep(text, depthMax)) return undefined;
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

function modelField(value: unknown): { bytes: Buffer; isJson: boolean } {
  if (typeof value === 'object' && value !== null) {
    return { bytes: Buffer.from(JSON.stringify(value, null, 2)), isJson: true };
  }
  if (typeof value !== 'string') return { bytes: Buffer.alloc(0), isJson: false };
  const trimmed = value.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    const parsed = modelParseJson(trimmed, JSON_DEPTH_MAX)?.value;
    if (typeof parsed === 'object' && parsed !== null) {
      return { bytes: Buffer.from(JSON.stringify(parsed, null, 2)), isJson: true };
    }
  }
  return { bytes: Buffer.from(value, 'utf8'), isJson: false };
}

class ModelBadRequest extends Error {}

function modelItem(item: unknown): NewEvent {
  if (typeof item !== 'object' || item === null || Array.isArray(item))
    throw new ModelBadRequest(BODY_INVALID);
  const fields = new Map(
    Object.entries(item).map(([key, value]) => [key.toLowerCase(), value as unknown]),
  );
  const rawId = fields.get('eventid');
  if (rawId !== undefined && rawId !== null && typeof rawId !== 'string')
    throw new ModelBadRequest(BODY_INVALID);
  const eventId = typeof rawId === 'string' ? modelGuid(rawId) : undefined;
  if (eventId === undefined) {
    if (typeof rawId === 'string' && !/^[{]?0{8}-?0{4}-?0{4}-?0{4}-?0{12}[}]?$/.test(rawId.trim()))
      throw new ModelBadRequest(BODY_INVALID);
    throw new ModelBadRequest("Empty eventId provided. (Parameter 'eventId')");
  }
  const eventType = fields.get('eventtype');
  if (typeof eventType !== 'string' || eventType === '')
    throw new ModelBadRequest('Empty eventType provided.');
  const data = modelField(fields.get('data'));
  const metadata = modelField(fields.get('metadata'));
  return {
    eventId,
    eventType,
    data: data.bytes,
    metadata: metadata.bytes,
    isJson: data.isJson || metadata.isJson,
  };
}

function modelBatch(body: Buffer, maxEventSizeBytes: number): NewEvent[] {
  const parsed = modelParseJson(body.toString('utf8'), JSON_DEPTH_MAX + 2);
  if (parsed === undefined) throw new ModelBadRequest(BODY_INVALID);
  const document = parsed.value;
  if (!Array.isArray(document) || document.length === 0) throw new ModelBadRequest(BODY_INVALID);
  const events = document.map((item: unknown) => modelItem(item));
  for (const event of events) {
    if (event.data.byteLength + event.metadata.byteLength > maxEventSizeBytes)
      throw new ModelBadRequest(`Too large events received. Limit is ${maxEventSizeBytes} bytes.`);
  }
  return events;
}

// ------------------------------------------------------------------ generators

/** Deterministic PRNG (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rng = () => number;

function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)] as T;
}

const CANONICAL = 'fbf4a1a1-b4a3-4dfe-a01f-ec52c34e16e4';

function guidText(rng: Rng): unknown {
  const valid = [CANONICAL, CANONICAL.toUpperCase(), `{${CANONICAL}}`, CANONICAL.replaceAll('-', '')];
  if (rng() < 0.8) return pick(rng, valid);
  return pick(rng, [
    ` ${CANONICAL} `,
    '00000000-0000-0000-0000-000000000000',
    '{00000000000000000000000000000000}',
    `${CANONICAL.slice(0, 35)}g`,
    `${CANONICAL.slice(0, 8)}x${CANONICAL.slice(9)}`,
    `${CANONICAL}0`,
    '',
    'not-a-guid',
    42,
    null,
    true,
    {},
  ]);
}

function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let level = 0; level < depth; level++) value = level % 2 === 0 ? [value] : { k: value };
  return value;
}

function awkwardString(rng: Rng): string {
  const parts = ['a', '"', '\\', '[', ']', '{', '}', '\\"', '\\\\', ' ', 'é', '\n', '0'];
  let text = '';
  const length = Math.floor(rng() * 12);
  for (let charIndex = 0; charIndex < length; charIndex++) text += pick(rng, parts);
  return text;
}

function dataValue(rng: Rng): unknown {
  const depth = JSON_DEPTH_MAX - 3 + Math.floor(rng() * 6);
  return pick(rng, [
    () => ({ filler: 'x'.repeat(Math.floor(rng() * 40)) }),
    () => [1, 'two', { three: [3] }],
    () => JSON.stringify({ inner: awkwardString(rng) }),
    () => ` [1, 2, "${awkwardString(rng).replaceAll('\\', '').replaceAll('"', '')}"] `,
    () => '{not json',
    () => awkwardString(rng),
    () => 7,
    () => null,
    () => false,
    () => undefined,
    () => nested(depth, awkwardString(rng)),
    () => JSON.stringify(nested(depth, 1)),
    () => ({ [awkwardString(rng)]: awkwardString(rng), '10': 1, b: 2, '2': 3 }),
  ])();
}

function fieldName(rng: Rng, name: string): string {
  return pick(rng, [name, name.toLowerCase(), name.toUpperCase(), name[0]?.toUpperCase() + name.slice(1)]);
}

function itemText(rng: Rng): string {
  if (rng() < 0.05) return pick(rng, ['1', '"text"', 'null', '[]', `[${JSON.stringify({})}]`]);
  const members: string[] = [];
  const add = (name: string, value: unknown): void => {
    if (value === undefined) return;
    members.push(`${JSON.stringify(name)}:${JSON.stringify(value)}`);
  };
  if (rng() < 0.97) add(fieldName(rng, 'eventId'), guidText(rng));
  if (rng() < 0.97)
    add(fieldName(rng, 'eventType'), rng() < 0.9 ? 'bench-event' : pick(rng, ['', 5, null]));
  if (rng() < 0.9) add(fieldName(rng, 'data'), dataValue(rng));
  if (rng() < 0.5) add(fieldName(rng, 'metadata'), dataValue(rng));
  // A repeated spelling of a name: the last one counts.
  if (rng() < 0.2) add(fieldName(rng, pick(rng, ['eventId', 'eventType', 'data', 'metadata'])), dataValue(rng));
  if (rng() < 0.2) add(awkwardString(rng), dataValue(rng));
  if (rng() < 0.1) members.push('"__proto__":{"x":1}');
  for (let swap = 0; swap < members.length; swap++) {
    const other = Math.floor(rng() * members.length);
    [members[swap], members[other]] = [members[other] as string, members[swap] as string];
  }
  return `{${members.join(rng() < 0.5 ? ',' : ' ,\n ')}}`;
}

function bodyText(rng: Rng): string {
  const count = 1 + Math.floor(rng() * 3);
  const items = Array.from({ length: count }, () => itemText(rng));
  let text = `[${items.join(',')}]`;
  if (rng() < 0.05) text = text.slice(0, Math.floor(rng() * text.length));
  return text;
}

// ------------------------------------------------------------------ comparisons

type Outcome = { error: string } | { events: unknown[] };

function outcomeOf(run: () => readonly NewEvent[]): Outcome {
  try {
    const events = run().map((event) => ({
      eventId: event.eventId,
      eventType: event.eventType,
      data: Buffer.from(event.data).toString('hex'),
      metadata: Buffer.from(event.metadata).toString('hex'),
      isJson: event.isJson,
    }));
    return { events };
  } catch (err: unknown) {
    if (err instanceof EventDbError || err instanceof ModelBadRequest) return { error: err.message };
    throw err;
  }
}

function parsedEvents(body: Buffer, maxEventSizeBytes: number): readonly NewEvent[] {
  const headers = { eventType: undefined, eventId: undefined };
  const parsed = parseEventBody(MediaType.EventsJson, body, headers, maxEventSizeBytes);
  if (parsed.kind !== 'events') throw new Error('a batch always has its events');
  return parsed.events;
}

describe('append body parsing against the reference model', () => {
  it('accepts and rejects the same batches, with the same events and messages', () => {
    const rng = random(20_240_611);
    let accepted = 0;
    const errors = new Set<string>();
    for (let caseIndex = 0; caseIndex < 3000; caseIndex++) {
      const body = Buffer.from(bodyText(rng));
      const limit = pick(rng, [40, 4096]);
      const actual = outcomeOf(() => parsedEvents(body, limit));
      const expected = outcomeOf(() => modelBatch(body, limit));
      expect(actual, body.toString()).toEqual(expected);
      if ('events' in actual) accepted += 1;
      else errors.add(actual.error);
    }
    // The generator reaches every outcome, not only one.
    expect(accepted).toBeGreaterThan(300);
    expect([...errors]).toEqual(
      expect.arrayContaining([
        BODY_INVALID,
        "Empty eventId provided. (Parameter 'eventId')",
        'Empty eventType provided.',
        'Too large events received. Limit is 40 bytes.',
      ]),
    );
  });

  it('finds the same depth as the character-by-character scan', () => {
    const rng = random(7);
    const alphabet = ['[', ']', '{', '}', '"', '\\', 'a', ' '];
    for (let caseIndex = 0; caseIndex < 20_000; caseIndex++) {
      let text = '';
      const length = Math.floor(rng() * 40);
      for (let charIndex = 0; charIndex < length; charIndex++) text += pick(rng, alphabet);
      const depthMax = Math.floor(rng() * 5);
      expect(isJsonTooDeep(text, depthMax), JSON.stringify(text)).toBe(modelTooDeep(text, depthMax));
    }
  });

  it('reads GUIDs as the regular expression does', () => {
    const rng = random(11);
    const alphabet = ['0', 'a', 'F', 'g', '-', '{', '}', ' ', '9'];
    const texts: string[] = [CANONICAL, CANONICAL.toUpperCase(), '00000000-0000-0000-0000-000000000000'];
    for (let caseIndex = 0; caseIndex < 5000; caseIndex++) {
      const chars = [...CANONICAL];
      const edits = 1 + Math.floor(rng() * 3);
      for (let edit = 0; edit < edits; edit++)
        chars[Math.floor(rng() * chars.length)] = pick(rng, alphabet);
      texts.push(chars.join(''));
    }
    for (const text of texts) expect(parseGuid(text), text).toBe(modelGuid(text));
  });
});
