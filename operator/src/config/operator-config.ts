/**
 * The operator's settings, from its environment (the Deployment sets them; the chart's values
 * map onto them). One zod schema; every problem named at once; read only by main.ts.
 */
import { hostname } from 'node:os';
import { z } from 'zod';

const Bool = z.enum(['true', 'false']).transform((value) => value === 'true');

export const OperatorConfigSchema = z.object({
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Comma-separated namespaces to watch; empty: all namespaces. */
  WATCH_NAMESPACES: z
    .string()
    .default('')
    .transform((value) => value.split(',').map((name) => name.trim()).filter((name) => name !== '')),
  /** Namespace of the leader Lease: the operator's own. */
  OPERATOR_NAMESPACE: z.string().min(1).optional(),
  /** This replica's identity in the Lease and in Events (the pod name). */
  POD_NAME: z.string().min(1).optional(),
  LEADER_ELECTION: Bool.default(true),
  LEASE_NAME: z.string().min(1).default('eventdb-operator'),
  LEASE_DURATION_MS: z.coerce.number().int().min(1000).default(15_000),
  RENEW_DEADLINE_MS: z.coerce.number().int().min(500).default(10_000),
  RETRY_PERIOD_MS: z.coerce.number().int().min(100).default(2000),
  /** host:port of /metrics, /healthz and /readyz. */
  PROBE_ADDRESS: z
    .string()
    .default('0.0.0.0:8080')
    .refine((value) => /^[^:]*:\d+$/.test(value), 'host:port'),
  /** The node image clusters run when spec.image is absent. Default eventdb:<operator version>. */
  DEFAULT_NODE_IMAGE: z.string().min(1).optional(),
  DEFAULT_DATA_SIZE: z.string().min(1).default('10Gi'),
  /** How to reach nodes: pod-ip (in the cluster) or port-forward (outside). Default by where it runs. */
  NODE_ACCESS: z.enum(['pod-ip', 'port-forward']).optional(),
  WORKERS: z.coerce.number().int().min(1).max(32).default(4),
  RESYNC_PERIOD_MS: z.coerce.number().int().min(1000).default(300_000),
  /**
   * Watch Secrets (list/watch, metadata kept only) so a change of a cluster's certificate or CA
   * Secret reconciles that cluster at once; false: Secrets are only read at each reconcile (a
   * rotation then starts up to 15 s late), for installs that must not list Secrets.
   */
  WATCH_SECRETS: Bool.default(true),
  /**
   * The operator may exec in node pods (RBAC create on pods/exec): tls.reload Signal sends SIGHUP
   * that way. false (the chart's rbac.podExec false): every certificate reload goes by Endpoint
   * (POST /admin/reloadconfig), and the rotation says so.
   */
  POD_EXEC: Bool.default(true),
});

export type OperatorConfig = z.infer<typeof OperatorConfigSchema> & {
  readonly identity: string;
  readonly inCluster: boolean;
  readonly nodeAccess: 'pod-ip' | 'port-forward';
  readonly probeHost: string;
  readonly probePort: number;
};

export class OperatorConfigError extends Error {
  readonly code = 'EDBOP_CONFIG_INVALID';
}

export function loadOperatorConfig(env: Readonly<Record<string, string | undefined>>, version: string): OperatorConfig {
  const parsed = OperatorConfigSchema.safeParse(env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new OperatorConfigError(`invalid operator configuration:\n  ${issues.join('\n  ')}`);
  }
  const config = parsed.data;
  const inCluster = env['KUBERNETES_SERVICE_HOST'] !== undefined;
  const [probeHost = '0.0.0.0', probePort = '8080'] = config.PROBE_ADDRESS.split(/:(?=\d+$)/);
  return {
    ...config,
    DEFAULT_NODE_IMAGE: config.DEFAULT_NODE_IMAGE ?? `eventdb:${version}`,
    identity: config.POD_NAME ?? `${hostname()}-${process.pid}`,
    inCluster,
    nodeAccess: config.NODE_ACCESS ?? (inCluster ? 'pod-ip' : 'port-forward'),
    probeHost,
    probePort: Number(probePort),
  };
}
