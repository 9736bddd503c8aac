{{- define "eventdb-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "eventdb-operator.labels" -}}
app.kubernetes.io/name: eventdb-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: eventdb
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "eventdb-operator.selector" -}}
app.kubernetes.io/name: eventdb-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "eventdb-operator.serviceAccountName" -}}
{{- default (include "eventdb-operator.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "eventdb-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The permissions the operator needs on EventDB clusters and their children, in every watched namespace. */}}
{{- define "eventdb-operator.rules" -}}
- apiGroups: [eventdb.io]
  resources: [eventdbclusters, scavengeschedules, backups, backupschedules]
  verbs: [get, list, watch]
# eventdbclusters: the backup-hold annotation; backups: ttl deletes them, a BackupSchedule creates
# them and prunes them (patch: spec.ttl 0s, the Backup controller then deletes them).
- apiGroups: [eventdb.io]
  resources: [eventdbclusters]
  verbs: [patch]
- apiGroups: [eventdb.io]
  resources: [backups]
  verbs: [create, patch, delete]
- apiGroups: [eventdb.io]
  resources: [eventdbclusters/status, scavengeschedules/status, backups/status, backupschedules/status]
  verbs: [get, patch, update]
# Owner references with blockOwnerDeletion need this where OwnerReferencesPermissionEnforcement is on.
- apiGroups: [eventdb.io]
  resources: [eventdbclusters/finalizers, backups/finalizers, backupschedules/finalizers]
  verbs: [update]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, create, delete, patch]
{{- if .Values.rbac.podExec }}
# Certificate reload with tls.reload Signal: SIGHUP to the node (PID 1) through the exec API (a
# WebSocket upgrade, a GET: authorized as get on pods/exec, and since Kubernetes 1.35 as create too).
- apiGroups: [""]
  resources: [pods/exec]
  verbs: [create, get]
{{- end }}
- apiGroups: [""]
  resources: [services, configmaps, secrets]
  verbs: [get, create, patch]
{{- if .Values.watchSecrets }}
# Certificate rotation: a change of a cluster's certificate or CA Secret reconciles it at once
# (the operator's cache keeps the Secrets' metadata only).
- apiGroups: [""]
  resources: [secrets]
  verbs: [list, watch]
{{- end }}
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, create, patch]
# Backup: the file-copy, restore and clean-up Jobs; VolumeSnapshots of the nodes' PVCs.
- apiGroups: [batch]
  resources: [jobs]
  verbs: [get, create, delete]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshots]
  verbs: [get, create]
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [get, create, patch]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
{{- end -}}
