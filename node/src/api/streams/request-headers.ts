/**
 * The AtomPub request headers. Each is accepted with the neutral `SVC-` prefix, EventStoreDB's
 * `ES-` prefix and KurrentDB's `Kurrent-` prefix; parse rules and error texts follow
 * EventStoreDB's AtomController, with the prefix the client actually used in the message.
 */
import type { FastifyRequest } from 'fastify';
import { badRequest } from '../error-handler.js';

const PREFIXES = ['SVC-', 'ES-', 'Kurrent-'] as const;

interface HeaderValue {
  readonly label: string;
  readonly value: string;
}

/** Per header name: each prefixed label and its lower-case lookup key (built once, not per request). */
const lookupKeys = new Map<string, readonly { readonly label: string; readonly key: string }[]>();

function keysOf(name: string): readonly { readonly label: string; readonly key: string }[] {
  let keys = lookupKeys.get(name);
  if (keys === undefined) {
    keys = PREFIXES.map((prefix) => ({ label: `${prefix}${name}`, key: `${prefix}${name}`.toLowerCase() }));
    lookupKeys.set(name, keys);
  }
  return keys;
}

/** The first of `names` (without prefix) present under any prefix. */
function readHeader(request: FastifyRequest, names: readonly string[]): HeaderValue | undefined {
  for (const name of names) {
    for (const { label, key } of keysOf(name)) {
      const raw = request.headers[key];
      const value = Array.isArray(raw) ? raw[0] : raw;
      if (value !== undefined) return { label, value: value.trim() };
    }
  }
  return undefined;
}

function readBoolean(
  request: FastifyRequest,
  names: readonly string[],
  fallback: boolean,
): boolean {
  const header = readHeader(request, names);
  if (header === undefined) return fallback;
  if (/^true$/i.test(header.value)) return true;
  if (/^false$/i.test(header.value)) return false;
  throw badRequest(`${header.label} header in wrong format.`);
}

export const EXPECTED_VERSION_ANY = -2;

/** Integer >= -4; default -2 (Any). */
export function readExpectedVersion(request: FastifyRequest): number {
  const header = readHeader(request, ['ExpectedVersion']);
  if (header === undefined) return EXPECTED_VERSION_ANY;
  const value = Number(header.value);
  if (!/^-?\d+$/.test(header.value) || !Number.isSafeInteger(value) || value < -4) {
    throw badRequest(`${header.label} header in wrong format.`);
  }
  return value;
}

export function readEventType(request: FastifyRequest): string | undefined {
  const header = readHeader(request, ['EventType']);
  return header === undefined || header.value === '' ? undefined : header.value;
}

/** A GUID other than the empty GUID, lower-cased; undefined when the header is absent. */
export function readEventId(request: FastifyRequest): string | undefined {
  const header = readHeader(request, ['EventId']);
  if (header === undefined) return undefined;
  const eventId = parseGuid(header.value);
  if (eventId === undefined) throw badRequest(`${header.label} header in wrong format.`);
  return eventId;
}

/** Validated for compatibility; a single node is always the leader, so the value has no effect. */
export function readRequiresMaster(request: FastifyRequest): boolean {
  return readBoolean(request, ['RequiresMaster', 'RequireMaster', 'RequireLeader'], false);
}

export function readHardDelete(request: FastifyRequest): boolean {
  return readBoolean(request, ['HardDelete'], false);
}

/** Whether links (`$>`) are resolved to their targets: default true (stream and single-event reads). */
export function readResolveLinkTos(request: FastifyRequest): boolean {
  return readBoolean(request, ['ResolveLinkTos', 'ResolveLinkTo'], true);
}

export const LONG_POLL_SECONDS_MAX = 3600;

/** Seconds to wait for new events, or undefined. */
export function readLongPollSeconds(request: FastifyRequest): number | undefined {
  const header = readHeader(request, ['LongPoll']);
  if (header === undefined) return undefined;
  const seconds = Number(header.value);
  if (!/^\d+$/.test(header.value) || seconds <= 0 || seconds > LONG_POLL_SECONDS_MAX) {
    throw badRequest(`${header.label} header in wrong format.`);
  }
  return seconds;
}

const GUID = /^\{?([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})\}?$/i;
const EMPTY_GUID = '00000000-0000-0000-0000-000000000000';

/** .NET Guid.TryParse's common forms (dashes and braces optional); the empty GUID is rejected. */
export function parseGuid(text: string): string | undefined {
  if (isCanonicalGuid(text)) return text === EMPTY_GUID ? undefined : text;
  const match = GUID.exec(text.trim());
  if (match === null) return undefined;
  const guid = match.slice(1, 6).join('-').toLowerCase();
  return guid === EMPTY_GUID ? undefined : guid;
}

/** `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` in lower-case hex: already in parseGuid's output form. */
function isCanonicalGuid(text: string): boolean {
  if (text.length !== 36) return false;
  for (let charIndex = 0; charIndex < 36; charIndex++) {
    const code = text.charCodeAt(charIndex);
    if (charIndex === 8 || charIndex === 13 || charIndex === 18 || charIndex === 23) {
      if (code !== 0x2d) return false;
    } else if (!((code >= 0x30 && code <= 0x39) || (code >= 0x61 && code <= 0x66))) {
      return false;
    }
  }
  return true;
}
