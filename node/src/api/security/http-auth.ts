/**
 * HTTP side of authentication: parsing Basic credentials, the 401 reply, and the endpoint
 * policies of EventStoreDB's legacy policy selector (anonymous, authenticated, ops-or-admins,
 * admins). A failed policy is always answered with 401 and an empty body, never 403.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

import type { Authorizer, Principal } from '../auth-types.js';

export interface BasicCredentials {
  readonly login: string;
  readonly password: string;
}

/** `X-` keeps browsers from popping up a login dialog, as EventStoreDB's middleware does. */
export const WWW_AUTHENTICATE_VALUE = 'X-Basic realm="ESDB"';

/**
 * Parses an `Authorization: Basic …` header. Undefined when there is no header or it uses
 * another scheme (left to other providers; here that means anonymous); `malformed` when a Basic
 * header cannot be decoded.
 */
export function parseBasicCredentials(
  header: string | undefined,
): BasicCredentials | 'malformed' | undefined {
  if (header === undefined) return undefined;
  const match = /^\s*basic\s+(\S*)\s*$/i.exec(header);
  if (match === null) return undefined;
  const encoded = match[1] ?? '';
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) return 'malformed';
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return 'malformed';
  return { login: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

export function replyUnauthorized(reply: FastifyReply): FastifyReply {
  return reply.code(401).header('www-authenticate', WWW_AUTHENTICATE_VALUE).send();
}

export type EndpointPolicy = 'anonymous' | 'authenticated' | 'ops-or-admins' | 'admins';

export type PolicyDecision =
  | { readonly allowed: true; readonly principal: Principal | undefined }
  | { readonly allowed: false };

/**
 * Authenticates the request and applies `policy`. When it fails, a 401 has already been sent
 * and the handler must return the reply without doing anything else.
 */
export async function authorizeRequest(
  authorizer: Authorizer,
  request: FastifyRequest,
  reply: FastifyReply,
  policy: EndpointPolicy,
): Promise<PolicyDecision> {
  const auth = await authorizer.authenticate(request);
  if (auth.kind === 'rejected') {
    replyUnauthorized(reply);
    return { allowed: false };
  }
  const principal = auth.kind === 'authenticated' ? auth.principal : undefined;
  if (policyAdmits(authorizer, policy, principal)) return { allowed: true, principal };
  replyUnauthorized(reply);
  return { allowed: false };
}

function policyAdmits(
  authorizer: Authorizer,
  policy: EndpointPolicy,
  principal: Principal | undefined,
): boolean {
  switch (policy) {
    case 'anonymous':
      return true;
    case 'authenticated':
      return principal !== undefined;
    case 'ops-or-admins':
      return authorizer.isAdmin(principal, true);
    case 'admins':
      return authorizer.isAdmin(principal, false);
  }
}
