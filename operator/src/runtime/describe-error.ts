/**
 * PURE: one line of words for anything a library may reject or emit as an error. Never
 * `[object Object]`: an Error gives its message (and code, and its cause); a Kubernetes V1Status
 * its message, reason and HTTP code; a WebSocket ErrorEvent (ws, isomorphic-ws: what
 * @kubernetes/client-node's Exec and PortForward reject with when the upgrade fails) the error it
 * carries or its message; a CloseEvent its code and reason; anything else its JSON.
 */

const MAX_LENGTH = 1000;

type Plain = Record<string, unknown>;

function isObject(value: unknown): value is Plain {
  return typeof value === 'object' && value !== null;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** A Kubernetes Status object (kind Status, or the fields of one). */
function isV1Status(value: Plain): boolean {
  return value['kind'] === 'Status' || ((value['status'] === 'Failure' || value['status'] === 'Success') && ('reason' in value || 'message' in value || 'code' in value));
}

function describeV1Status(status: Plain): string {
  const message = text(status['message']);
  const reason = text(status['reason']);
  const code = typeof status['code'] === 'number' ? status['code'] : undefined;
  const details = [reason, code === undefined ? undefined : `HTTP ${code}`].filter((entry): entry is string => entry !== undefined);
  const causes = isObject(status['details']) && Array.isArray(status['details']['causes']) ? (status['details']['causes'] as unknown[]) : [];
  const causeText = causes
    .filter(isObject)
    .map((cause) => text(cause['message']))
    .filter((entry): entry is string => entry !== undefined && entry !== message);
  const head = message ?? (status['status'] === 'Success' ? 'Success' : 'a Status without a message');
  return `${head}${details.length === 0 ? '' : ` (${details.join(', ')})`}${causeText.length === 0 ? '' : `: ${causeText.join('; ')}`}`;
}

function describeErrorObject(err: Error, depth: number): string {
  const code = (err as { code?: unknown }).code;
  const statusCode = (err as { statusCode?: unknown }).statusCode;
  const message = text(err.message) ?? err.name;
  const extras: string[] = [];
  if ((typeof code === 'string' || typeof code === 'number') && !message.includes(String(code))) extras.push(String(code));
  if (typeof statusCode === 'number' && !message.includes(String(statusCode))) extras.push(`HTTP ${statusCode}`);
  let out = extras.length === 0 ? message : `${message} (${extras.join(', ')})`;
  if (err instanceof AggregateError && err.errors.length > 0) out += `: ${err.errors.map((entry) => describe(entry, depth + 1)).join('; ')}`;
  const cause = (err as { cause?: unknown }).cause;
  if (cause !== undefined && depth < 3) {
    const causeText = describe(cause, depth + 1);
    if (!out.includes(causeText)) out += ` (cause: ${causeText})`;
  }
  return out;
}

function describe(value: unknown, depth: number): string {
  if (value === undefined || value === null) return `no error detail (${String(value)})`;
  if (typeof value === 'string') return text(value) ?? 'an empty error message';
  if (typeof value !== 'object') return String(value);
  if (value instanceof Error) return describeErrorObject(value, depth);
  const object = value as Plain;
  if (isV1Status(object)) return describeV1Status(object);
  // A WebSocket ErrorEvent: { type: 'error', message, error, target }.
  if (object['type'] === 'error' && ('error' in object || 'message' in object)) {
    const inner = object['error'];
    if (inner !== undefined && inner !== null && depth < 3) return describe(inner, depth + 1);
    return text(object['message']) ?? 'a WebSocket error without a message';
  }
  // A WebSocket CloseEvent: { type: 'close', code, reason, wasClean }.
  if (object['type'] === 'close' && typeof object['code'] === 'number') {
    return `the WebSocket closed with code ${object['code']}${text(object['reason']) === undefined ? '' : `: ${text(object['reason'])}`}`;
  }
  const message = text(object['message']);
  if (message !== undefined) return message;
  try {
    const json = JSON.stringify(value, (key, entry: unknown) => (key === 'target' || key === '_socket' ? undefined : entry));
    if (json !== undefined && json !== '{}') return json;
  } catch {
    // circular: fall through
  }
  const name = (value as { constructor?: { name?: string } }).constructor?.name;
  return `an error of type ${name ?? 'object'} without a message`;
}

/** The error in words (at most 1000 characters). */
export function describeError(err: unknown): string {
  const out = describe(err, 0);
  return out.length > MAX_LENGTH ? `${out.slice(0, MAX_LENGTH - 1)}…` : out;
}
