/**
 * Protocol-independent read authorisation: "may principal P see event E?". Every read path
 * (a stream read, a single event, `$all`, a persistent subscription's messages, link resolution)
 * asks here after reading, so that no path shows what the ACL of the event's own stream denies:
 * reading a stream that holds links, or `$all` where its ACL admits a user, must not be a way
 * around the ACL of the stream an event was written to.
 *
 * Pure apart from the injected `StreamReadCheck` (the security service's `canAccessStream`); no
 * HTTP types, so the HTTP routes and the gRPC services use the same decisions.
 */
import type { Principal, StreamAccess } from '../auth-types.js';

/** The one question this module needs answered (implemented by the security service). */
export interface StreamReadCheck {
  canAccessStream(principal: Principal | undefined, stream: string, access: StreamAccess): Promise<boolean>;
}

/** The part of an event that decides who may see it: the stream it was written to. */
export interface StreamEvent {
  readonly stream: string;
}

/**
 * Answers "may `principal` read events of stream S" with one ACL lookup per stream per request
 * (a `$all` page holds many events of few streams). Events of a metastream `$$s` are governed by
 * `mr` of `s` (the security service maps that).
 */
export class ReadDecisions {
  private readonly byStream = new Map<string, Promise<boolean>>();

  constructor(
    private readonly check: StreamReadCheck,
    private readonly principal: Principal | undefined,
  ) {}

  mayRead(stream: string): Promise<boolean> {
    let decision = this.byStream.get(stream);
    if (decision === undefined) {
      decision = this.check.canAccessStream(this.principal, stream, 'r');
      this.byStream.set(stream, decision);
    }
    return decision;
  }

  /** The events the principal may read, in their order. */
  async filter<E extends StreamEvent>(events: readonly E[]): Promise<E[]> {
    const allowed = await Promise.all(events.map((event) => this.mayRead(event.stream)));
    return events.filter((_, index) => allowed[index] === true);
  }

  /**
   * The target of a link, when the principal may read the target's stream; else undefined, so
   * the link is shown unresolved (as a link whose target cannot be read) and nothing of the
   * target's data leaves the node.
   */
  async linkTarget<E extends StreamEvent>(target: E | undefined): Promise<E | undefined> {
    if (target === undefined) return undefined;
    return (await this.mayRead(target.stream)) ? target : undefined;
  }

  /**
   * A subscription message (`event` = a resolved link's target, `link` = the link) as this
   * reader may see it: the target dropped, the link kept, when the target's stream denies it.
   */
  async resolved<E extends StreamEvent, R extends { readonly event: E | undefined; readonly link: E | undefined }>(
    message: R,
  ): Promise<R> {
    if (message.link === undefined || message.event === undefined) return message;
    return (await this.mayRead(message.event.stream)) ? message : { ...message, event: undefined };
  }
}

export function readDecisions(check: StreamReadCheck, principal: Principal | undefined): ReadDecisions {
  return new ReadDecisions(check, principal);
}
