/**
 * The seam between the streams routes and the security module (users, groups, ACLs).
 * The streams routes authenticate every request and ask the authorizer before each operation.
 */
import type { FastifyRequest } from 'fastify';

export type StreamAccess = 'r' | 'w' | 'd' | 'mr' | 'mw';

export interface Principal {
  readonly login: string;
  /** Group names, e.g. ['$admins']. The implicit role '$all' applies to every authenticated user. */
  readonly groups: readonly string[];
}

export type AuthResult =
  | { readonly kind: 'anonymous' }
  | { readonly kind: 'authenticated'; readonly principal: Principal }
  /** Credentials were sent but are wrong or the user is disabled: the route must answer 401. */
  | { readonly kind: 'rejected' };

export interface Authorizer {
  authenticate(request: FastifyRequest): Promise<AuthResult>;
  /** True when the principal (undefined = anonymous) may perform `access` on `stream`. */
  canAccessStream(principal: Principal | undefined, stream: string, access: StreamAccess): Promise<boolean>;
  /** True for members of $admins (and $ops where `allowOps`). */
  isAdmin(principal: Principal | undefined, allowOps: boolean): boolean;
}
