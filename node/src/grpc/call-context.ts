/**
 * What every call needs before it reaches a capability: who is calling (Basic credentials per
 * call, checked by the same security service and users as the HTTP API) and whether this node
 * may serve it (`requires-leader` and writes on a follower answer NotLeader with the leader's
 * endpoint, which the clients follow).
 *
 * Insecure mode behaves as the original's: authentication and authorisation are off, every
 * call acts as the system (the clients send no credentials over plain HTTP/2).
 */
import type { Logger } from 'pino';
import type { Authorizer, Principal, StreamAccess } from '../api/auth-types.js';
import { accessDenied, badCredentials, notLeader } from './errors.js';
import { ConnectError, Code } from '@connectrpc/connect';

/** The caller in insecure mode: the original disables authorisation there. */
export const INSECURE_PRINCIPAL: Principal = { login: '$system', groups: ['$admins'] };

export interface Leadership {
  /** True while this node accepts writes (a node alone always does). */
  isLeader(): boolean;
  /** Where clients reach the leader (advertised HTTP endpoint), when one is known. */
  leaderEndpoint(): { readonly host: string; readonly port: number } | undefined;
}

export interface CallContextDeps {
  readonly authorizer: Authorizer;
  readonly insecure: boolean;
  readonly log: Logger;
  readonly leadership?: Leadership;
}

/** The one field of a request the security service reads, without depending on fastify here. */
type AuthenticateInput = Parameters<Authorizer['authenticate']>[0];

export class CallGuard {
  constructor(private readonly deps: CallContextDeps) {}

  /** The caller (undefined: anonymous); wrong credentials answer UNAUTHENTICATED. */
  async principal(headers: Headers): Promise<Principal | undefined> {
    if (this.deps.insecure) return INSECURE_PRINCIPAL;
    const authorization = headers.get('authorization') ?? undefined;
    if (authorization === undefined) return undefined;
    const input = { headers: { authorization }, log: this.deps.log } as unknown as AuthenticateInput;
    const result = await this.deps.authorizer.authenticate(input);
    if (result.kind === 'rejected') throw badCredentials();
    return result.kind === 'authenticated' ? result.principal : undefined;
  }

  canAccess(principal: Principal | undefined, stream: string, access: StreamAccess): Promise<boolean> {
    return this.deps.authorizer.canAccessStream(principal, stream, access);
  }

  async authorize(principal: Principal | undefined, stream: string, access: StreamAccess): Promise<void> {
    if (!(await this.deps.authorizer.canAccessStream(principal, stream, access))) throw accessDenied();
  }

  /** Throws NotLeader when the call must reach the leader and this node is not it. */
  checkLeader(headers: Headers, write: boolean): void {
    const leadership = this.deps.leadership;
    if (leadership === undefined || leadership.isLeader()) return;
    if (!write && headers.get('requires-leader') !== 'true') return;
    const leader = leadership.leaderEndpoint();
    if (leader === undefined) throw new ConnectError('No leader is known: the cluster is electing one', Code.Unavailable);
    throw notLeader(leader.host, leader.port);
  }
}
