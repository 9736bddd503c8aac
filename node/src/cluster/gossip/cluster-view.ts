/**
 * A node's view of the cluster, built from gossip: every member it knows, the newest document
 * each one published about itself, and when this node last heard from it directly (it answered
 * our gossip, or sent us its own). A member is alive while heard from within `deadAfterMs`;
 * dead members are dropped after the dead member removal period. A member that restarted comes
 * back under a new instance id at the same HTTP endpoint: the older entry gives way. Pure.
 */
import { httpEndpointOf, type MemberInfo } from '../member-info.js';

interface Known {
  readonly info: MemberInfo;
  /** Last direct contact (ms); -Infinity when only heard of through others. */
  readonly lastHeardMs: number;
}

export interface ClusterViewOptions {
  readonly deadAfterMs: number;
  readonly removeAfterMs: number;
}

export class ClusterView {
  private readonly members = new Map<string, Known>();

  constructor(private self: MemberInfo, private readonly options: ClusterViewOptions) {}

  get selfInfo(): MemberInfo {
    return this.self;
  }

  updateSelf(info: MemberInfo): void {
    this.self = info;
  }

  /**
   * Merges a gossip document received from `fromInstanceId` (directly: it answered us, or it
   * posted to us). Its entry about itself refreshes its liveness.
   */
  merge(members: readonly MemberInfo[], fromInstanceId: string | undefined, nowMs: number): void {
    for (const info of members) {
      if (info.instanceId === this.self.instanceId) continue;
      const known = this.members.get(info.instanceId);
      const direct = info.instanceId === fromInstanceId;
      const newer = known === undefined || Date.parse(info.timeStamp) >= Date.parse(known.info.timeStamp);
      if (!newer && !direct) continue;
      this.members.set(info.instanceId, {
        info: newer ? info : known!.info,
        lastHeardMs: direct ? nowMs : (known?.lastHeardMs ?? Number.NEGATIVE_INFINITY),
      });
      if (newer) this.dropRestarted(info);
    }
  }

  /** An older instance at the endpoint of `info` is a previous run of the same node. */
  private dropRestarted(info: MemberInfo): void {
    const endpoint = httpEndpointOf(info);
    for (const [id, known] of this.members) {
      if (id === info.instanceId || httpEndpointOf(known.info) !== endpoint) continue;
      if (Date.parse(known.info.timeStamp) <= Date.parse(info.timeStamp)) this.members.delete(id);
    }
  }

  isAlive(instanceId: string, nowMs: number): boolean {
    if (instanceId === this.self.instanceId) return true;
    const known = this.members.get(instanceId);
    return known !== undefined && nowMs - known.lastHeardMs <= this.options.deadAfterMs;
  }

  /** Members, this node first, with isAlive as this node judges it; drops the long dead. */
  snapshot(nowMs: number): MemberInfo[] {
    for (const [id, known] of this.members) {
      if (nowMs - known.lastHeardMs > this.options.removeAfterMs && known.lastHeardMs !== Number.NEGATIVE_INFINITY) this.members.delete(id);
    }
    const others = [...this.members.values()].map((k) => ({ ...k.info, isAlive: this.isAlive(k.info.instanceId, nowMs) }));
    others.sort((a, b) => httpEndpointOf(a).localeCompare(httpEndpointOf(b)));
    return [{ ...this.self, isAlive: true }, ...others];
  }

  member(instanceId: string): MemberInfo | undefined {
    return instanceId === this.self.instanceId ? this.self : this.members.get(instanceId)?.info;
  }

  /** HTTP endpoints (host:port) of the other known members. */
  peerEndpoints(): string[] {
    return [...this.members.values()].map((k) => httpEndpointOf(k.info));
  }
}
