/**
 * The spec the operator acts on: the user's EventDBCluster spec with every default filled in
 * and everything checked that the CRD cannot check (the CRD may be older than the operator,
 * CEL cannot parse CRON or time zones). Defaults live here, not in the CRD, so GitOps tools see
 * no fields they did not write.
 */
import type { z } from 'zod';
import { isKnownTimeZone, parseDurationMs } from '../api/common.js';
import type { Affinity, ResourceRequirements, Toleration, TopologySpreadConstraint } from '../api/core-v1.js';
import { EventDBClusterSpec, type TlsMode } from '../api/eventdb-cluster.js';
import { checkNodeConfiguration, type NodeConfiguration } from '../api/node-configuration.js';
import { checkWindow, type Window } from '../controllers/eventdbcluster/maintenance-window.js';
import { adminSecretName, opsSecretName } from './names.js';

export interface OperatorDefaults {
  /** The node image of the operator's own version. */
  readonly nodeImage: string;
  /** Default data volume size. */
  readonly dataSize: string;
}

export interface SecretKeyRef {
  readonly name: string;
  readonly key: string;
  /** True when the operator creates the Secret. */
  readonly generated: boolean;
}

export interface VolumeSettings {
  readonly size: string | number;
  readonly storageClassName?: string;
}

export interface EffectiveSpec {
  readonly replicas: 1 | 3 | 5;
  readonly readOnlyReplicas: number;
  readonly image: string;
  readonly imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  readonly resources: ResourceRequirements;
  readonly storage: { readonly data: VolumeSettings; readonly index?: VolumeSettings };
  readonly configuration: NodeConfiguration;
  readonly tls: {
    readonly mode: TlsMode;
    readonly certificateSecret?: string;
    readonly caSecret?: string;
    readonly reservedNodeCommonName: string;
    readonly reload: 'Signal' | 'Endpoint';
    /** SelfSigned: validity of issued node certificates, and how long before expiry they are renewed. */
    readonly certificateValidityMs: number;
    readonly renewBeforeMs: number;
  };
  readonly users: { readonly admin: SecretKeyRef; readonly ops: SecretKeyRef };
  readonly licenseSecret?: { readonly name: string; readonly key: string };
  readonly updateStrategy: 'RollingUpdate' | 'Supervised';
  readonly maintenanceWindows: readonly Window[];
  readonly paused: boolean;
  readonly hibernation: boolean;
  readonly sourceBackup?: string;
  readonly podTemplate: {
    readonly labels: Record<string, string>;
    readonly annotations: Record<string, string>;
    readonly nodeSelector?: Record<string, string>;
    readonly affinity?: Affinity;
    readonly tolerations?: Toleration[];
    readonly topologySpreadConstraints?: TopologySpreadConstraint[];
    readonly priorityClassName?: string;
  };
}

export type SpecCheck = { readonly ok: true; readonly spec: EffectiveSpec } | { readonly ok: false; readonly issues: string[] };

function zodIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => `spec.${issue.path.join('.')}: ${issue.message}`);
}

export function effectiveSpec(clusterName: string, rawSpec: unknown, defaults: OperatorDefaults): SpecCheck {
  // The configuration is checked on its own, so its issues and the others' are reported together.
  const { configuration: rawConfiguration, ...rest } = (rawSpec ?? {}) as Record<string, unknown>;
  const parsed = EventDBClusterSpec.safeParse(rest);
  const configuration = checkNodeConfiguration(rawConfiguration);
  if (!parsed.success) return { ok: false, issues: [...zodIssues(parsed.error), ...(configuration.ok ? [] : configuration.issues)] };
  const spec = parsed.data;
  const issues: string[] = [];
  if (spec.replicas !== 1 && spec.replicas !== 3 && spec.replicas !== 5) issues.push('spec.replicas: must be 1, 3 or 5');
  if (spec.replicas === 1 && spec.readOnlyReplicas > 0) issues.push('spec.readOnlyReplicas: read-only replicas need replicas 3 or 5');
  if (!configuration.ok) issues.push(...configuration.issues);
  const windows: Window[] = [];
  (spec.maintenanceWindows ?? []).forEach((window, index) => {
    if (window.timeZone !== undefined && !isKnownTimeZone(window.timeZone)) {
      issues.push(`spec.maintenanceWindows[${index}].timeZone: unknown time zone ${window.timeZone}`);
      return;
    }
    try {
      windows.push(checkWindow(window));
    } catch (err: unknown) {
      issues.push(`spec.maintenanceWindows[${index}]: ${(err as Error).message}`);
    }
  });
  const tlsMode = spec.tls?.mode ?? 'SelfSigned';
  if (tlsMode === 'Secret' && spec.tls?.certificateSecret === undefined) {
    issues.push('spec.tls.certificateSecret: required with tls.mode Secret');
  }
  const durationOf = (text: string | undefined, fallbackMs: number, field: string): number => {
    if (text === undefined) return fallbackMs;
    try {
      return parseDurationMs(text);
    } catch (err: unknown) {
      issues.push(`spec.tls.${field}: ${(err as Error).message}`);
      return fallbackMs;
    }
  };
  const certificateValidityMs = durationOf(spec.tls?.certificateValidity, 365 * 86_400_000, 'certificateValidity');
  const renewBeforeMs = durationOf(spec.tls?.renewBefore, Math.min(30 * 86_400_000, certificateValidityMs / 2), 'renewBefore');
  if (renewBeforeMs >= certificateValidityMs) issues.push('spec.tls.renewBefore: must be shorter than tls.certificateValidity');
  if (issues.length > 0 || !configuration.ok) return { ok: false, issues };
  return {
    ok: true,
    spec: {
      replicas: spec.replicas as 1 | 3 | 5,
      readOnlyReplicas: spec.readOnlyReplicas,
      image: spec.image ?? defaults.nodeImage,
      imagePullPolicy: spec.imagePullPolicy,
      resources: spec.resources ?? {},
      storage: {
        data: spec.storage?.data ?? { size: defaults.dataSize },
        ...(spec.storage?.index === undefined ? {} : { index: spec.storage.index }),
      },
      configuration: configuration.configuration,
      tls: {
        mode: tlsMode,
        ...(spec.tls?.certificateSecret === undefined ? {} : { certificateSecret: spec.tls.certificateSecret.name }),
        ...(spec.tls?.caSecret === undefined ? {} : { caSecret: spec.tls.caSecret.name }),
        reservedNodeCommonName: spec.tls?.reservedNodeCommonName ?? 'eventdb-node',
        reload: spec.tls?.reload ?? 'Signal',
        certificateValidityMs,
        renewBeforeMs,
      },
      users: {
        admin: secretRef(spec.users?.adminPasswordSecret, adminSecretName(clusterName)),
        ops: secretRef(spec.users?.opsPasswordSecret, opsSecretName(clusterName)),
      },
      ...(spec.licenseSecret === undefined ? {} : { licenseSecret: spec.licenseSecret }),
      updateStrategy: spec.updateStrategy,
      maintenanceWindows: windows,
      paused: spec.paused,
      hibernation: spec.hibernation,
      ...(spec.sourceBackup === undefined ? {} : { sourceBackup: spec.sourceBackup.name }),
      podTemplate: {
        labels: spec.podTemplate?.metadata?.labels ?? {},
        annotations: spec.podTemplate?.metadata?.annotations ?? {},
        ...(spec.podTemplate?.nodeSelector === undefined ? {} : { nodeSelector: spec.podTemplate.nodeSelector }),
        ...(spec.podTemplate?.affinity === undefined ? {} : { affinity: spec.podTemplate.affinity }),
        ...(spec.podTemplate?.tolerations === undefined ? {} : { tolerations: spec.podTemplate.tolerations }),
        ...(spec.podTemplate?.topologySpreadConstraints === undefined
          ? {}
          : { topologySpreadConstraints: spec.podTemplate.topologySpreadConstraints }),
        ...(spec.podTemplate?.priorityClassName === undefined ? {} : { priorityClassName: spec.podTemplate.priorityClassName }),
      },
    },
  };
}

function secretRef(reference: { name: string; key: string } | undefined, generatedName: string): SecretKeyRef {
  return reference === undefined
    ? { name: generatedName, key: 'password', generated: true }
    : { name: reference.name, key: reference.key, generated: false };
}
