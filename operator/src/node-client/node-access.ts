/**
 * How the operator reaches a node's HTTP API. In the cluster: the pod's IP. As a local process
 * (development, the fast test loop): a port-forward through the apiserver, as kubectl does
 * (see ../runtime/port-forward-access.ts). Either way the address dialled is not a name in the
 * node certificate: over https the client checks the node's DNS name instead (NodeTrust).
 */
import { NODE_HTTP_PORT } from '../api/group.js';

export interface NodePod {
  readonly name: string;
  readonly uid: string;
  readonly ip: string | undefined;
}

export type NodeScheme = 'http' | 'https';

export interface NodeAccess {
  /** The node's base URL with `scheme`, or undefined while it cannot be reached (no IP yet). */
  baseUrl(namespace: string, pod: NodePod, scheme: NodeScheme): Promise<string | undefined>;
  /** Stops what the access keeps open (port-forward listeners). */
  close(): Promise<void>;
}

export const podIpAccess: NodeAccess = {
  async baseUrl(_namespace, pod, scheme) {
    if (pod.ip === undefined || pod.ip === '') return undefined;
    return `${scheme}://${pod.ip.includes(':') ? `[${pod.ip}]` : pod.ip}:${NODE_HTTP_PORT}`;
  },
  async close() {},
};
