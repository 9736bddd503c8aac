// The node's HTTP API as the pages use it. The credentials live only in this module's memory
// (never in localStorage, sessionStorage or a cookie): reloading the page asks for them again.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface Session {
  readonly login: string;
  readonly groups: readonly string[];
  /** $admins: user management, everything else. */
  readonly admin: boolean;
  /** $ops or $admins (or the logins admin/ops): /admin/*, options, scavenges. */
  readonly operator: boolean;
}

let authorization: string | undefined;

function basic(login: string, password: string): string {
  const bytes = new TextEncoder().encode(`${login}:${password}`);
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `Basic ${btoa(binary)}`;
}

export interface RequestOptions {
  readonly method?: string;
  readonly accept?: string;
  readonly body?: string;
  readonly contentType?: string;
  readonly headers?: Record<string, string>;
  readonly signal?: AbortSignal;
}

/** One API call; a non-2xx answer becomes an ApiError whose message says what went wrong. */
export async function request(path: string, options: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { accept: options.accept ?? 'application/json', ...options.headers };
  if (authorization !== undefined) headers.authorization = authorization;
  if (options.contentType !== undefined) headers['content-type'] = options.contentType;
  let response: Response;
  try {
    response = await fetch(path, {
      method: options.method ?? 'GET',
      headers,
      ...(options.body === undefined ? {} : { body: options.body }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(0, `The node cannot be reached (${err instanceof Error ? err.message : String(err)})`);
  }
  if (response.ok) return response;
  throw new ApiError(response.status, await describeFailure(response));
}

async function describeFailure(response: Response): Promise<string> {
  const text = (await response.text().catch(() => '')).trim().slice(0, 500);
  if (response.status === 401) return 'Access denied: your user may not do this (401).';
  const reason = response.statusText || `HTTP ${response.status}`;
  if (text === '' || text === reason) return `${reason} (${response.status})`;
  return `${reason} (${response.status}): ${text}`;
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const response = await request(path, signal === undefined ? {} : { signal });
  const text = await response.text();
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

export async function sendJson(method: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return request(path, { method, body: JSON.stringify(body), contentType: 'application/json', headers });
}

/** Checks the credentials against the node (reading one's own user needs them) and keeps them. */
export async function logIn(login: string, password: string): Promise<Session> {
  const candidate = basic(login, password);
  let response: Response;
  try {
    response = await fetch(`/users/${encodeURIComponent(login)}`, {
      headers: { accept: 'application/json', authorization: candidate },
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (err) {
    throw new ApiError(0, `The node cannot be reached (${err instanceof Error ? err.message : String(err)})`);
  }
  if (response.status === 401) throw new ApiError(401, 'Wrong user name or password, or the user is disabled.');
  if (!response.ok) throw new ApiError(response.status, await describeFailure(response));
  const body = (await response.json()) as { data?: { groups?: string[] } };
  const groups = body.data?.groups ?? [];
  authorization = candidate;
  const admin = groups.includes('$admins');
  return { login, groups, admin, operator: admin || groups.includes('$ops') || login === 'admin' || login === 'ops' };
}

export function logOut(): void {
  authorization = undefined;
}

/** A version 4 UUID from the browser's random source (crypto.randomUUID needs a secure context). */
export function uuid(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x40;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export const enc = encodeURIComponent;
